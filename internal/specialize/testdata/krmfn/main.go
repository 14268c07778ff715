// Command krmfn is a tiny KRM function used by the exec tests: it annotates
// every resource with data.value of its ConfigMap functionConfig, or
// reports an error result when data.fail is set.
package main

import (
	"errors"
	"os"

	"github.com/kptdev/krm-functions-sdk/go/fn"
)

func main() {
	if err := fn.AsMain(fn.ResourceListProcessorFunc(process)); err != nil {
		os.Exit(1)
	}
}

func process(rl *fn.ResourceList) (bool, error) {
	data, _, err := rl.FunctionConfig.NestedStringMap("data")
	if err != nil {
		return false, err
	}
	if msg := data["fail"]; msg != "" {
		rl.Results = append(rl.Results, fn.ErrorResult(errors.New(msg)))
		return false, nil
	}
	for _, o := range rl.Items {
		if err := o.SetAnnotation("example.com/touched-by", data["value"]); err != nil {
			return false, err
		}
	}
	return true, nil
}
