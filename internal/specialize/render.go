package specialize

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Upstream identifies the blueprint revision a variant is rendered from.
type Upstream struct {
	Repo      string // git repository URL (never one carrying credentials)
	Directory string // package directory in the repository, e.g. "/free5gc-upf"
	Ref       string // the revision's tag, e.g. "free5gc-upf/v6"
	Commit    string // the commit the tag points at
}

// ExecPolicy says which exec functions may run. A blueprint's Kptfile is
// written by whoever controls the blueprint repository, so running the
// commands it names on the controller's machine is a trust decision the
// operator makes, executable by executable; the zero value refuses them all.
type ExecPolicy struct {
	// Allowed names the executables exec functions may run (see
	// CheckExecAllowlist): a bare name allows the file it resolves to on
	// PATH, an absolute path allows exactly that file.
	Allowed []string
	// Timeout bounds each exec function; zero means DefaultExecTimeout.
	Timeout time.Duration
	// MaxOutput bounds the bytes an exec function may write to stdout and
	// stderr together; zero means DefaultExecMaxOutput.
	MaxOutput int64
	// Sandbox, when set, is an executable that serves "fn starlark" (the flotilla binary,
	// ServeStarlark): the built-in starlark function then runs in a child process of it, whose
	// memory is bounded at SandboxMemory, as exec functions run (timeout, output bound, an
	// environment of PATH only). Empty: in this process (the CLI, on its user's own files).
	Sandbox string
	// SandboxMemory bounds the memory of a sandboxed starlark script; zero means
	// DefaultSandboxMemory.
	SandboxMemory int64
}

// DefaultSandboxMemory bounds a sandboxed starlark script's memory when ExecPolicy sets none.
const DefaultSandboxMemory = 128 << 20

// DefaultExecTimeout bounds an exec function when ExecPolicy sets none.
const DefaultExecTimeout = time.Minute

// DefaultExecMaxOutput bounds an exec function's output when ExecPolicy sets
// none: far more than any package, small enough for the controller's memory.
const DefaultExecMaxOutput = 16 << 20

// Request is everything a variant depends on. Render reads nothing else, so
// equal requests give equal files.
type Request struct {
	// Blueprint holds the blueprint's files, paths relative to the package
	// directory, as read from git at the blueprint's tag.
	Blueprint map[string][]byte
	Upstream  Upstream
	// Name is the downstream package name (Kptfile metadata.name and name in
	// package-context.yaml).
	Name string
	// PackagePath is the package's path in the target repository, e.g.
	// "free5gc-upf" or "clusters/edge01/free5gc-upf".
	PackagePath string
	Values      map[string]string // merged values (see MergeValues)
	Injections  []Injection
	// Pipeline holds extra mutators that run before the Kptfile's own.
	Pipeline []Function
	Exec     ExecPolicy
}

// Render renders the variant and returns its files:
//  1. the blueprint's files, with the Kptfile's metadata.name, upstream and
//     upstreamLock set in kpt's format;
//  2. package-context.yaml with name, package-path and the values;
//  3. config injection from req.Injections;
//  4. apply-setters with the values;
//  5. req.Pipeline, then the Kptfile's mutators, then its validators.
//
// Errors name the file, resource or function at fault.
func Render(ctx context.Context, req Request) (map[string][]byte, error) {
	if req.Name == "" {
		return nil, errors.New("render: the downstream package name is empty")
	}
	p, err := readPackage(req.Blueprint)
	if err != nil {
		return nil, fmt.Errorf("blueprint: %w", err)
	}
	if p.kptfile == nil {
		return nil, fmt.Errorf("blueprint: no %s at the package root; a package is a directory with a %s", kptfileName, kptfileName)
	}
	mutators, validators, err := pipeline(p.kptfile)
	if err != nil {
		return nil, err
	}
	if err := setUpstream(p.kptfile, req.Name, req.Upstream); err != nil {
		return nil, err
	}

	pc, err := packageContext(req.Name, req.PackagePath, req.Values)
	if err != nil {
		return nil, err
	}
	items := []*yaml.RNode{pc}
	for _, n := range p.items {
		if filePath(n) != packageContextFile {
			items = append(items, n)
		}
	}

	if err := inject(items, req.Injections); err != nil {
		return nil, fmt.Errorf("config injection: %w", err)
	}
	if err := applySetters(items, req.Values); err != nil {
		return nil, fmt.Errorf("apply-setters: %w", err)
	}

	r := newRunner(req.Exec, items)
	for _, f := range append(append([]Function(nil), req.Pipeline...), mutators...) {
		if items, err = r.run(ctx, f, items); err != nil {
			return nil, err
		}
	}
	for _, f := range validators {
		// Validators see copies: kpt discards whatever they change.
		copies := make([]*yaml.RNode, len(items))
		for i, n := range items {
			copies[i] = n.Copy()
		}
		if _, err := r.run(ctx, f, copies); err != nil {
			return nil, fmt.Errorf("validator: %w", err)
		}
	}
	p.items = items
	return p.write()
}
