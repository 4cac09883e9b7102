package quantityguard

import (
	"regexp"
	"testing"
)

// quantityPlace matches the field paths of quantityPaths, a map's key as
// [key], and what a JSON patch names for a copy or move above a map.
var quantityPlace = regexp.MustCompile(`^kind$|^spec\.storage\.(size|capacity)$|^spec(\.(proxy|backup|bootstrap))?\.resources\.(requests|limits)(\[.*\])?$`)

// fuzzedContentTypes are the Content-Types Check reads, and one it does not.
var fuzzedContentTypes = []string{jsonType, mergeType, smpType, jsonPatch, yamlType, applyYAML, cborType, applyCBOR, protobufType, "text/plain"}

// FuzzCheck runs the guard on arbitrary bodies of every Content-Type it
// reads: it parses what no decoder has checked yet, so it must not panic,
// and whatever it refuses it refuses on a quantity's place.
func FuzzCheck(f *testing.F) {
	for i, body := range []string{
		withSize(`"1Gi"`),
		withSize(`"` + hugeExponent + `"`),
		`[{"op":"replace","path":"/spec/storage/size","value":"5Gi"},{"op":"copy","from":"/a","path":"/spec"}]`,
		"spec:\n  storage:\n    size: 10Gi\n",
		string(protobufBody([]byte{15<<3 | 3, 1<<3 | 0, 7, 15<<3 | 4}, protobufSpec("1Gi"))),
		"\xa1dspec\xa1gstorage\xa1dsizec1Gi", // CBOR {"spec":{"storage":{"size":"1Gi"}}}
		`{"spec":{"proxy":{"resources":{"limits":{"cpu":"1e-9999"}}}}}`,
		`[{"op":"move","from":"/a","path":"/spec/bootstrap/resources/requests/cpu"}]`,
	} {
		for j := range fuzzedContentTypes {
			f.Add(uint8(i+j), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, contentType uint8, body []byte) {
		err := Check(fuzzedContentTypes[int(contentType)%len(fuzzedContentTypes)], body)
		if err != nil && !quantityPlace.MatchString(err.Field) {
			t.Errorf("refused on %s: %v", err.Field, err)
		}
	})
}
