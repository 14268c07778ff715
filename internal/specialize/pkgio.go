package specialize

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	kptfileName        = "Kptfile"
	packageContextFile = "package-context.yaml"
)

// internalAnnotations are the bookkeeping annotations kyaml and kpt put on
// resources while they are in a ResourceList. They never reach the output.
// Functions built on older SDKs still write the legacy (config.k8s.io) names,
// so those are stripped too, deprecated or not.
var internalAnnotations = []string{
	kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, //nolint:staticcheck // see above
	kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation, //nolint:staticcheck // see above
	kioutil.IdAnnotation, kioutil.LegacyIdAnnotation, //nolint:staticcheck // see above
	kioutil.SeqIndentAnnotation,
	kioutil.InternalAnnotationsMigrationResourceIDAnnotation,
}

// pkg is a package held in memory the way kpt holds it while rendering: the
// KRM resources as kyaml nodes annotated with their file path and index, the
// root Kptfile apart (flotilla owns it; functions never see it), and every
// other file as bytes that are copied unchanged.
type pkg struct {
	kptfile *yaml.RNode
	items   []*yaml.RNode
	files   map[string][]byte
}

// readPackage splits a package's files into resources and pass-through
// files. Files are visited in sorted order so the item order, and with it
// everything downstream, does not depend on map iteration.
func readPackage(files map[string][]byte) (*pkg, error) {
	p := &pkg{files: map[string][]byte{}}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if name == kptfileName {
			nodes, err := readResources(name, data)
			if err != nil {
				return nil, err
			}
			if len(nodes) != 1 {
				return nil, fmt.Errorf("%s: want exactly one resource, found %d", name, len(nodes))
			}
			p.kptfile = nodes[0]
			continue
		}
		nodes, ok, err := readKRMFile(name, data)
		if err != nil {
			return nil, err
		}
		if !ok {
			p.files[name] = data
			continue
		}
		p.items = append(p.items, nodes...)
	}
	return p, nil
}

// readKRMFile parses a YAML file into resources. ok is false for files that
// are not KRM (no .yaml/.yml suffix, a nested package's Kptfile, or YAML that
// is not all resources, such as a Helm values file): those pass through as
// bytes, which is what kpt does with them too.
func readKRMFile(name string, data []byte) (nodes []*yaml.RNode, ok bool, err error) {
	ext := path.Ext(name)
	if ext != ".yaml" && ext != ".yml" {
		return nil, false, nil
	}
	nodes, err = readResources(name, data)
	if err != nil {
		return nil, false, err
	}
	if len(nodes) == 0 {
		return nil, false, nil
	}
	for _, n := range nodes {
		if n.YNode().Kind != yaml.MappingNode || n.GetApiVersion() == "" || n.GetKind() == "" {
			return nil, false, nil
		}
	}
	return nodes, true, nil
}

// readResources parses the documents of one file and annotates each with the
// file path and its index, keeping the sequence indentation style so that an
// untouched file keeps its look.
func readResources(name string, data []byte) ([]*yaml.RNode, error) {
	r := &kio.ByteReader{
		Reader:            bytes.NewReader(data),
		SetAnnotations:    map[string]string{kioutil.PathAnnotation: name},
		PreserveSeqIndent: true,
		DisableUnwrapping: true,
	}
	nodes, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	for _, n := range nodes {
		if err := kioutil.CopyLegacyAnnotations(n); err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
	}
	return nodes, nil
}

// write serializes the package back into files.
func (p *pkg) write() (map[string][]byte, error) {
	out, err := writeResources(p.items)
	if err != nil {
		return nil, err
	}
	for name, data := range p.files {
		if _, clash := out[name]; clash {
			return nil, fmt.Errorf("%s: a function wrote resources to a file that is not YAML resources", name)
		}
		out[name] = data
	}
	if p.kptfile != nil {
		if _, clash := out[kptfileName]; clash {
			return nil, fmt.Errorf("%s: a function wrote resources to the Kptfile", kptfileName)
		}
		b, err := encodeNodes([]*yaml.RNode{p.kptfile})
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", kptfileName, err)
		}
		out[kptfileName] = b
	}
	return out, nil
}

// writeResources groups resources by their path annotation (resources a
// function created without one get kpt's default <kind>_<name>.yaml) and
// writes each file's documents in index order.
func writeResources(items []*yaml.RNode) (map[string][]byte, error) {
	type entry struct {
		index int
		node  *yaml.RNode
	}
	byFile := map[string][]entry{}
	for _, n := range items {
		file, index, err := fileAndIndex(n)
		if err != nil {
			return nil, err
		}
		byFile[file] = append(byFile[file], entry{index, n})
	}
	out := map[string][]byte{}
	for file, entries := range byFile {
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].index < entries[j].index })
		nodes := make([]*yaml.RNode, len(entries))
		for i, e := range entries {
			nodes[i] = e.node
		}
		b, err := encodeNodes(nodes)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", file, err)
		}
		out[file] = b
	}
	return out, nil
}

// fileAndIndex returns where a resource is written. Paths come from function
// output, so they are checked to stay inside the package.
func fileAndIndex(n *yaml.RNode) (string, int, error) {
	file, index, err := kioutil.GetFileAnnotations(n)
	if err != nil {
		return "", 0, err
	}
	if file == "" {
		meta, err := n.GetMeta()
		if err != nil {
			return "", 0, err
		}
		file = kioutil.CreatePathAnnotationValue("", meta)
	}
	clean := path.Clean(file)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", 0, fmt.Errorf("resource %s has path %q outside the package", resourceID(n), file)
	}
	i, err := strconv.Atoi(index)
	if err != nil {
		i = 0
	}
	return clean, i, nil
}

// encodeNodes writes documents the way kpt writes package files, without
// the bookkeeping annotations.
func encodeNodes(nodes []*yaml.RNode) ([]byte, error) {
	var buf bytes.Buffer
	w := kio.ByteWriter{Writer: &buf, ClearAnnotations: internalAnnotations}
	if err := w.Write(nodes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// resourceID names a resource for users: Kind/namespace/name, or Kind/name
// when it has no namespace.
func resourceID(n *yaml.RNode) string {
	if ns := n.GetNamespace(); ns != "" {
		return n.GetKind() + "/" + ns + "/" + n.GetName()
	}
	return n.GetKind() + "/" + n.GetName()
}

// filePath returns the path annotation of a resource ("" when it has none).
func filePath(n *yaml.RNode) string {
	file, _, _ := kioutil.GetFileAnnotations(n)
	return file
}

// setAnnotation sets an annotation, written plain where YAML allows it:
// kyaml's setter always single-quotes, which no hand-written package does.
func setAnnotation(n *yaml.RNode, key, value string) error {
	if err := n.PipeE(yaml.SetAnnotation(key, value)); err != nil {
		return err
	}
	f, err := n.Pipe(yaml.Lookup(yaml.MetadataField, yaml.AnnotationsField, key))
	if err != nil || f == nil {
		return err
	}
	f.YNode().Style, f.YNode().Tag = 0, yaml.NodeTagString
	return nil
}
