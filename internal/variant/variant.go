// Package variant publishes one target's specialized copy of a blueprint into the target
// cluster's repository: render (internal/specialize), 3-way merge with the copy in git so direct
// edits survive, and publish as the next revision when anything changed. Shared by the controller
// and, like fleet, free of the Kubernetes client.
package variant

import (
	"context"
	"errors"
	"fmt"
	"path"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// Git is the part of pkgrepo.Store variants use.
type Git interface {
	Refresh(ctx context.Context, r pkgrepo.Remote) (pkgrepo.Snapshot, error)
	Latest(ctx context.Context, r pkgrepo.Remote, pkg string) (pkgrepo.Revision, bool, error)
	ReadPackage(ctx context.Context, r pkgrepo.Remote, pkg, commit string) (map[string][]byte, error)
	Publish(ctx context.Context, r pkgrepo.Remote, req pkgrepo.PublishRequest) (pkgrepo.PublishResult, error)
	ReadRendered(ctx context.Context, r pkgrepo.Remote, pkg string) (map[string][]byte, bool, error)
}

// Request is one target's variant.
type Request struct {
	// Blueprint is where the blueprint is read from, and its path in that repository.
	Blueprint     pkgrepo.Remote
	BlueprintPath string
	// Upstream is recorded in the variant's Kptfile (Repo is the blueprint repository's syncURL).
	Upstream specialize.Upstream
	// Target is the cluster's repository and PackagePath the variant's path in it.
	Target      pkgrepo.Remote
	PackagePath string
	Values      map[string]string
	Injections  []specialize.Injection
	Pipeline    []specialize.Function
	Exec        specialize.ExecPolicy
	// Proposal proposes the variant on branch proposed/<PackagePath>/vN for approval instead of
	// publishing it (the render is kept with the proposal and becomes the base once approved).
	Proposal bool
}

// Result is the variant revision to deploy.
type Result struct {
	// Revision is the published revision; for a proposal, its number and commit (no tag).
	Revision pkgrepo.Revision
	// Changed is true when this call published a new revision (or proposal).
	Changed bool
	// Branch is the proposal branch, when Request.Proposal proposed a change.
	Branch string
}

// Publish renders the variant, merges it with the copy in the target repository (keeping direct
// edits: base = what flotilla rendered for the copy, kept with it in git; ours = the copy at the
// branch head; theirs = the new render), and publishes the result with the new render kept for the
// next merge. Every input of the previous render (blueprint, values, injected objects, functions
// and their configuration) is in that base, so a change of any of them reaches the variant. A
// conflict returns *specialize.Conflict and publishes nothing.
func Publish(ctx context.Context, git Git, req Request) (Result, error) {
	blueprint, err := git.ReadPackage(ctx, req.Blueprint, req.BlueprintPath, req.Upstream.Commit)
	if err != nil {
		return Result{}, fmt.Errorf("read blueprint %s: %w", req.Upstream.Ref, err)
	}
	theirs, err := render(ctx, req, blueprint, req.Upstream, req.Values)
	if err != nil {
		return Result{}, err
	}
	// Someone may edit the variant between our read and our push: then merge again with the
	// new copy rather than overwrite the edit.
	for attempt := 0; ; attempt++ {
		merged, head, err := mergeWithCopy(ctx, git, req, theirs)
		if err != nil {
			return Result{}, err
		}
		res, err := git.Publish(ctx, req.Target, pkgrepo.PublishRequest{
			Package:     req.PackagePath,
			Files:       merged,
			Message:     fmt.Sprintf("%s: render %s", req.PackagePath, req.Upstream.Ref),
			PackageBase: head,
			Rendered:    theirs,
			Proposal:    req.Proposal,
		})
		if errors.Is(err, pkgrepo.ErrPackageChanged) && attempt < maxMergeAttempts {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Revision: pkgrepo.Revision{Package: req.PackagePath, Number: res.Revision, Tag: res.Tag, Commit: res.Commit}, Changed: res.Changed, Branch: res.Branch}, nil
	}
}

// maxMergeAttempts bounds re-merging when the variant keeps changing under us.
const maxMergeAttempts = 5

func render(ctx context.Context, req Request, blueprint map[string][]byte, up specialize.Upstream, values map[string]string) (map[string][]byte, error) {
	files, err := specialize.Render(ctx, specialize.Request{
		Blueprint:   blueprint,
		Upstream:    up,
		Name:        path.Base(req.PackagePath),
		PackagePath: req.PackagePath,
		Values:      values,
		Injections:  req.Injections,
		Pipeline:    req.Pipeline,
		Exec:        req.Exec,
	})
	if err != nil {
		return nil, fmt.Errorf("render %s from %s: %w", req.PackagePath, up.Ref, err)
	}
	return files, nil
}

// mergeWithCopy 3-way merges the new render with the variant in git, if there is one, and returns
// the merged files and the branch head the copy was read at.
func mergeWithCopy(ctx context.Context, git Git, req Request, theirs map[string][]byte) (map[string][]byte, string, error) {
	snap, err := git.Refresh(ctx, req.Target)
	if err != nil {
		return nil, "", err
	}
	if _, ok, err := git.Latest(ctx, req.Target, req.PackagePath); err != nil || !ok || snap.Head == "" {
		return theirs, snap.Head, err
	}
	ours, err := git.ReadPackage(ctx, req.Target, req.PackagePath, snap.Head)
	if err != nil {
		return theirs, snap.Head, nil // the variant's directory is gone from the branch: render it anew
	}
	if base, ok, err := git.ReadRendered(ctx, req.Target, req.PackagePath); err != nil || ok {
		if err != nil {
			return nil, "", err
		}
		merged, err := specialize.Merge3(base, ours, theirs)
		return merged, snap.Head, err
	}
	// A variant published before renders were kept: re-render its base from the inputs its
	// Kptfile and package-context.yaml record (today's injections and functions stand in for
	// theirs then, once; the publish keeps the render from now on).
	prev, err := previousInputs(ours)
	if err != nil {
		return nil, "", err
	}
	oldBlueprint, err := git.ReadPackage(ctx, req.Blueprint, req.BlueprintPath, prev.upstream.Commit)
	if err != nil {
		return nil, "", fmt.Errorf("read the blueprint the variant was rendered from (%s): %w", prev.upstream.Ref, err)
	}
	prev.upstream.Repo = req.Upstream.Repo
	base, err := render(ctx, req, oldBlueprint, prev.upstream, prev.values)
	if err != nil {
		return nil, "", err
	}
	merged, err := specialize.Merge3(base, ours, theirs)
	return merged, snap.Head, err
}

// inputs are what a variant in git was rendered from, read back from its Kptfile's upstreamLock
// and its package-context.yaml.
type inputs struct {
	upstream specialize.Upstream
	values   map[string]string
}

func previousInputs(files map[string][]byte) (inputs, error) {
	var kf struct {
		UpstreamLock struct {
			Git struct {
				Directory string `json:"directory"`
				Ref       string `json:"ref"`
				Commit    string `json:"commit"`
			} `json:"git"`
		} `json:"upstreamLock"`
	}
	if err := yaml.Unmarshal(files["Kptfile"], &kf); err != nil || kf.UpstreamLock.Git.Commit == "" {
		return inputs{}, fmt.Errorf("the variant's Kptfile has no upstreamLock.git.commit: it was not rendered by flotilla, or was edited: restore it")
	}
	var ctxMap struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(files["package-context.yaml"], &ctxMap); err != nil {
		return inputs{}, fmt.Errorf("the variant's package-context.yaml: %w", err)
	}
	values := map[string]string{}
	for k, v := range ctxMap.Data {
		if k != "name" && k != "package-path" {
			values[k] = v
		}
	}
	g := kf.UpstreamLock.Git
	return inputs{upstream: specialize.Upstream{Directory: g.Directory, Ref: g.Ref, Commit: g.Commit}, values: values}, nil
}
