package quantityguard

import (
	"testing"
)

// fuzzedContentTypes are the Content-Types Check reads, and one it does not.
var fuzzedContentTypes = []string{jsonType, mergeType, smpType, jsonPatch, yamlType, applyYAML, cborType, applyCBOR, protobufType, "text/plain"}

// FuzzCheck runs the guard on arbitrary bodies of every Content-Type it
// reads: it parses what no decoder has checked yet, so it must not panic,
// and whatever it refuses it refuses on spec.storage.size.
func FuzzCheck(f *testing.F) {
	for i, body := range []string{
		withSize(`"1Gi"`),
		withSize(`"` + hugeExponent + `"`),
		`[{"op":"replace","path":"/spec/storage/size","value":"5Gi"},{"op":"copy","from":"/a","path":"/spec"}]`,
		"spec:\n  storage:\n    size: 10Gi\n",
		string(protobufBody([]byte{15<<3 | 3, 1<<3 | 0, 7, 15<<3 | 4}, protobufSpec("1Gi"))),
		"\xa1dspec\xa1gstorage\xa1dsizec1Gi", // CBOR {"spec":{"storage":{"size":"1Gi"}}}
	} {
		for j := range fuzzedContentTypes {
			f.Add(uint8(i+j), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, contentType uint8, body []byte) {
		err := Check(fuzzedContentTypes[int(contentType)%len(fuzzedContentTypes)], body)
		if err != nil && err.Field != "spec.storage.size" {
			t.Errorf("refused on %s: %v", err.Field, err)
		}
	})
}
