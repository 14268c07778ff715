// Package intern makes the objects an informer holds share one copy of the strings they repeat.
//
// A fleet's cached objects repeat most of their strings: every generated PackageDeployment names
// its namespace, its set (label, owner reference and owner UID), its cluster, its package and
// revision, the resolved tag and commit, and condition reasons and messages that read the same
// on every cluster of a set. JSON decoding gives each object its own copy of each. Table.Object
// replaces them with one shared copy, so the cache's size follows what differs between objects.
package intern

import (
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultEntries is how many distinct strings a Table keeps before it starts over.
const DefaultEntries = 1 << 15

// MaxLen is the longest string a Table keeps: longer ones are left as they are. A long string is
// rarely the same in two objects, and what a full table can hold after the objects that used its
// strings are gone is bounded by DefaultEntries × MaxLen (8 MiB).
const MaxLen = 256

// Table keeps one copy of each string it was given, up to a number of entries: when it is full it
// forgets them all and starts over, so strings no object holds any more (old resourceVersions'
// messages, deleted objects' names) do not pile up. Forgetting costs only sharing: objects keep
// the strings they have. Safe for concurrent use.
type Table struct {
	mu      sync.Mutex
	strings map[string]string
	max     int
}

// NewTable returns a Table that keeps up to entries strings (DefaultEntries when not positive).
func NewTable(entries int) *Table {
	if entries <= 0 {
		entries = DefaultEntries
	}
	return &Table{strings: make(map[string]string), max: entries}
}

// String returns the Table's copy of s, keeping s when it has none.
func (t *Table) String(s string) string {
	if s == "" || len(s) > MaxLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.strings[s]; ok {
		return c
	}
	if len(t.strings) >= t.max {
		clear(t.strings)
	}
	// A clone: s may share its bytes with a larger buffer the Table must not keep alive.
	c := strings.Clone(s)
	t.strings[c] = c
	return c
}

// Len is how many strings the Table keeps now.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.strings)
}

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	// ownFields are the fields of ObjectMeta that are each object's own: no other object shares
	// them, so keeping them would only fill the Table.
	ownFields     = map[string]bool{"Name": true, "GenerateName": true, "UID": true, "ResourceVersion": true, "SelfLink": true}
	stringMapType = reflect.TypeFor[map[string]string]()
)

// Object replaces the strings of obj (a pointer, as informers hold) with the Table's copies, in
// place: struct fields, slices, maps and interface values, all the way down. In its ObjectMeta it
// leaves alone what is the object's own (name, generateName, uid, resourceVersion, selfLink).
// Byte slices (a Secret's data) and unexported fields are not touched. The object reads the same
// afterwards: only which copy of a string it holds changes.
func (t *Table) Object(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	t.value(v.Elem())
}

// value interns v, which must be settable (or hold nothing to set).
func (t *Table) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(t.String(v.String()))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			t.value(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return
		}
		// A slice's elements and a pointer's target are interned in place; a string or a map is
		// stored again (a map's keys can only be replaced in a new map). Anything else is left as
		// it is: storing it again would allocate a new box for it.
		switch e := v.Elem(); e.Kind() {
		case reflect.Slice, reflect.Pointer:
			t.value(e)
		case reflect.String, reflect.Map:
			v.Set(t.copied(e))
		}
	case reflect.Struct:
		meta := v.Type() == objectMetaType
		for i := range v.NumField() {
			if meta && ownFields[v.Type().Field(i).Name] {
				continue
			}
			if f := v.Field(i); f.CanSet() {
				t.value(f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			t.value(v.Index(i))
		}
	case reflect.Map:
		switch {
		case !v.CanSet() || v.Len() == 0:
		case v.Type() == stringMapType: // labels, annotations, data: without reflection
			v.Set(reflect.ValueOf(t.stringMap(v.Interface().(map[string]string))))
		default:
			v.Set(t.mapCopy(v))
		}
	}
}

// copied returns a settable copy of e, interned.
func (t *Table) copied(e reflect.Value) reflect.Value {
	c := reflect.New(e.Type()).Elem()
	c.Set(e)
	t.value(c)
	return c
}

// mapCopy returns a copy of the map v with its keys and values interned (a new map: a map's
// keys can only be replaced by building it again).
func (t *Table) mapCopy(v reflect.Value) reflect.Value {
	out := reflect.MakeMapWithSize(v.Type(), v.Len())
	stringKeys := v.Type().Key().Kind() == reflect.String
	for it := v.MapRange(); it.Next(); {
		k := it.Key()
		if stringKeys {
			k = reflect.ValueOf(t.String(k.String())).Convert(k.Type())
		}
		out.SetMapIndex(k, t.copied(it.Value()))
	}
	return out
}

// stringMap returns m with its keys and values the Table's copies (a new map: a map's keys can
// only be replaced by building it again).
func (t *Table) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[t.String(k)] = t.String(v)
	}
	return out
}
