package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestYAMLDocsToList(t *testing.T) {
	list, err := yamlDocsToList([]byte("apiVersion: v1\nkind: A\n---\n---\napiVersion: v1\nkind: B\n"))
	if err != nil {
		t.Fatal(err)
	}
	items := list["items"].([]any)
	if list["kind"] != "List" || len(items) != 2 || items[1].(map[string]any)["kind"] != "B" {
		t.Errorf("list = %v", list)
	}
	var b bytes.Buffer
	if err := writeStructured(&b, "json", list); err != nil || !strings.Contains(b.String(), `"kind": "List"`) {
		t.Errorf("json = %s, %v", b.String(), err)
	}
	if err := checkOutput("wide"); err == nil {
		t.Error("-o wide accepted")
	}
}
