#!/bin/sh
# The exec KRM function StartManager's controller allows (testenv.ExecFunction): it passes the
# ResourceList through, with each "greeting: hello" value changed to "greeting: hello-from-exec",
# so a test sees in the published variant that it ran.
exec sed 's/greeting: hello$/greeting: hello-from-exec/'
