package render

import (
	"fmt"
	"strings"
)

// dependencyWaves gives every pin its depth in the dependency graph (0 without pinned
// dependencies), used as Argo CD sync waves. Dependencies on unpinned deployments are ignored; a
// cycle is an error naming it, since no engine could ever sync it.
func dependencyWaves(pins []Pin) (map[string]int, error) {
	deps := map[string][]string{}
	for _, p := range pins {
		deps[p.Deployment.Name] = nil
	}
	for _, p := range pins {
		for _, d := range p.Deployment.Spec.DependsOn {
			if _, ok := deps[d.Name]; ok {
				deps[p.Deployment.Name] = append(deps[p.Deployment.Name], d.Name)
			}
		}
	}
	waves := map[string]int{}
	const visiting = -1
	var visit func(name string, trail []string) error
	visit = func(name string, trail []string) error {
		switch w, seen := waves[name]; {
		case seen && w == visiting:
			return fmt.Errorf("dependency cycle: %s", strings.Join(append(trail, name), " → "))
		case seen:
			return nil
		}
		waves[name] = visiting
		wave := 0
		for _, d := range deps[name] {
			if err := visit(d, append(trail, name)); err != nil {
				return err
			}
			wave = max(wave, waves[d]+1)
		}
		waves[name] = wave
		return nil
	}
	for _, p := range pins {
		if err := visit(p.Deployment.Name, nil); err != nil {
			return nil, err
		}
	}
	return waves, nil
}
