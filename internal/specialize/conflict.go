package specialize

import (
	"fmt"
	"sort"
	"strings"
)

// Conflict is a change made both in the downstream package and by the new
// render, in different ways. Merge3 returns the first one (in file, resource,
// field order) and counts the others in More.
type Conflict struct {
	File     string // package-relative path of the file
	Resource string // Kind/namespace/name, or Kind/name; empty for a non-KRM file
	Field    string // dotted field path such as spec.replicas; empty for a whole resource or file
	Ours     string // the downstream value, "(removed)" when it was deleted
	Theirs   string // the new render's value, "(removed)" when it was deleted
	More     int    // how many further conflicts the merge found
}

const removed = "(removed)"

// Error says what conflicts and what to do about it; it ends up in a
// condition message, so it has no timestamps and no raw dumps.
func (c *Conflict) Error() string {
	var what string
	switch {
	case c.Resource == "":
		what = fmt.Sprintf("file %s was changed both in the downstream package and by the new render", c.File)
	case c.Field == "":
		what = fmt.Sprintf("%s in %s was edited in the downstream package but the new render removes it", c.Resource, c.File)
	default:
		what = fmt.Sprintf("%s in %s: field %s was changed in the downstream package (to %s) and by the new render (to %s)",
			c.Resource, c.File, c.Field, c.Ours, c.Theirs)
	}
	msg := "merge conflict: " + what + "; resolve it by editing the downstream package to match the new render, or the values or blueprint to match the edit"
	if c.More > 0 {
		msg += fmt.Sprintf(" (%d more conflicts)", c.More)
	}
	return msg
}

// firstConflict orders conflicts so the reported one does not depend on map
// iteration, and returns it with the count of the rest.
func firstConflict(cs []*Conflict) error {
	if len(cs) == 0 {
		return nil
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Field < b.Field
	})
	c := *cs[0]
	c.More = len(cs) - 1
	return &c
}

// shortValue renders a value for a message: one line, bounded length.
func shortValue(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}
