package main

import (
	"path/filepath"
	"testing"
)

// The benchmark's CRD must describe the same fields as the Go types, or the
// comparison would not be of the same API.
func TestBenchCRDMatchesTypes(t *testing.T) {
	crd, err := loadCRD(filepath.Join("..", "..", "..", "..", "artifacts", "bench", "keyvaluestores-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkCRDMatchesTypes(crd); err != nil {
		t.Fatal(err)
	}
}
