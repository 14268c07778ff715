package specialize

import (
	"github.com/flotilla-dev/flotilla/internal/giturl"

	"fmt"
	"maps"
	"slices"

	kptfilev1 "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	packageContextName = "kptfile.kpt.dev"
	localConfigAnno    = "config.kubernetes.io/local-config"
)

// reservedContextKeys are set by flotilla in package-context.yaml; a value
// of the same name would silently lose, so it is rejected instead (Porch
// rejects them in PackageVariant's packageContext for the same reason).
var reservedContextKeys = []string{"name", "package-path"}

// setUpstream records, in kpt's Kptfile format, which blueprint revision the
// variant was rendered from. kpt and Porch read these fields to update a
// package, so a variant published by flotilla stays a normal kpt package.
// The rest of the blueprint's Kptfile (pipeline, info, comments) is kept.
func setUpstream(kf *yaml.RNode, name string, up Upstream) error {
	// Set the value in place so a comment on the name survives.
	if n, err := kf.Pipe(yaml.Lookup(yaml.MetadataField, yaml.NameField)); err == nil && n != nil {
		n.YNode().Value, n.YNode().Tag = name, yaml.NodeTagString
	} else if err := kf.PipeE(yaml.SetK8sName(name)); err != nil {
		return fmt.Errorf("set Kptfile name: %w", err)
	}
	// The Kptfile is committed and read by anyone with access to the target repository.
	if err := giturl.Check(up.Repo); err != nil {
		return fmt.Errorf("upstream %s: %w", giturl.Redact(up.Repo), err)
	}
	upstream := kptfilev1.Upstream{
		Type:           kptfilev1.GitOrigin,
		Git:            &kptfilev1.Git{Repo: up.Repo, Directory: up.Directory, Ref: up.Ref},
		UpdateStrategy: kptfilev1.ResourceMerge,
	}
	lock := kptfilev1.UpstreamLock{
		Type: kptfilev1.GitOrigin,
		Git:  &kptfilev1.GitLock{Repo: up.Repo, Directory: up.Directory, Ref: up.Ref, Commit: up.Commit},
	}
	// kpt writes upstream and upstreamLock right after metadata; doing the
	// same keeps variants diffable against packages kpt itself produced.
	if err := setFieldAfter(kf, "upstream", upstream, "metadata"); err != nil {
		return err
	}
	return setFieldAfter(kf, "upstreamLock", lock, "upstream")
}

// setFieldAfter sets field to the YAML encoding of v, in place when the field
// exists, else right after the field named after.
func setFieldAfter(rn *yaml.RNode, field string, v any, after string) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", field, err)
	}
	val, err := yaml.Parse(string(b))
	if err != nil {
		return fmt.Errorf("encode %s: %w", field, err)
	}
	if rn.Field(field) != nil {
		return rn.PipeE(yaml.SetField(field, val))
	}
	content := rn.YNode().Content
	at := len(content)
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value == after {
			at = i + 2
		}
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: field}
	content = append(content[:at], append([]*yaml.Node{key, val.YNode()}, content[at:]...)...)
	rn.YNode().Content = content
	return nil
}

// pipeline reads the Kptfile's own function pipeline.
func pipeline(kf *yaml.RNode) (mutators, validators []Function, err error) {
	var k kptfilev1.KptFile
	if err := kf.YNode().Decode(&k); err != nil {
		return nil, nil, fmt.Errorf("read %s pipeline: %w", kptfileName, err)
	}
	if k.Pipeline == nil {
		return nil, nil, nil
	}
	return convertFunctions(k.Pipeline.Mutators), convertFunctions(k.Pipeline.Validators), nil
}

func convertFunctions(in []kptfilev1.Function) []Function {
	out := make([]Function, 0, len(in))
	for _, f := range in {
		out = append(out, Function{
			Image: f.Image, Exec: f.Exec, ConfigMap: f.ConfigMap, ConfigPath: f.ConfigPath, Name: f.Name,
			Selectors: convertSelectors(f.Selectors), Exclude: convertSelectors(f.Exclusions),
		})
	}
	return out
}

func convertSelectors(in []kptfilev1.Selector) []Selector {
	var out []Selector
	for _, s := range in {
		out = append(out, Selector{
			APIVersion: s.APIVersion, Kind: s.Kind, Name: s.Name, Namespace: s.Namespace,
			Labels: s.Labels, Annotations: s.Annotations,
		})
	}
	return out
}

// packageContext builds package-context.yaml: the ConfigMap kpt and Porch
// generate for a package (name kptfile.kpt.dev, local-config so it is never
// applied), carrying the package name, its path and the merged values, so
// functions such as set-namespace or a starlark script can read them.
func packageContext(name, pkgPath string, values map[string]string) (*yaml.RNode, error) {
	for _, k := range reservedContextKeys {
		if _, ok := values[k]; ok {
			return nil, fmt.Errorf("value %q is reserved: flotilla sets it in %s; rename the value", k, packageContextFile)
		}
	}
	rn, err := yaml.Parse(`apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + packageContextName + `
  annotations:
    ` + localConfigAnno + `: "true"
`)
	if err != nil {
		return nil, err
	}
	data := map[string]string{"name": name, "package-path": pkgPath}
	for k, v := range values {
		data[k] = v
	}
	keys := slices.Sorted(maps.Keys(data))
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		m.Content = append(m.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: k},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: data[k]})
	}
	if err := rn.PipeE(yaml.SetField("data", yaml.NewRNode(m))); err != nil {
		return nil, err
	}
	if err := rn.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, packageContextFile)); err != nil {
		return nil, err
	}
	return rn, kioutil.CopyLegacyAnnotations(rn)
}
