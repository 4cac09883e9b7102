// Package quantityguard refuses request bodies holding a quantity the
// server cannot afford to decode: spec.storage.size (v1alpha1) or
// spec.storage.capacity (v1beta1), and the requests and limits of each
// container (spec.resources, spec.proxy.resources, spec.backup.resources,
// spec.bootstrap.resources).
//
// k8s.io/apimachinery's resource.ParseQuantity, which every decoder of a
// KeyValueStore calls on spec.storage.size (JSON, YAML, protobuf, CBOR, and
// the strategic-merge-patch and server-side-apply paths through unstructured
// objects), costs time and memory exponential in the length of its input's
// exponent: "1e-99999999" pins a CPU for minutes, a larger one for hours,
// before any of our code runs. A quantity whose exponent is large but parses
// quickly (e.g. "1e2147483647") does the same later, the first time it is
// compared with another size. So the guard looks at spec.storage.size in the
// request body before the decoder does, and refuses a value longer than
// MaxQuantityLength characters or with an exponent of MaxQuantityExponent or
// more in magnitude. No real size comes near either limit; validation then
// bounds the value itself (validation.MaxStorageSize).
package quantityguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

const (
	// MaxQuantityLength is the longest spec.storage.size accepted, in bytes.
	MaxQuantityLength = 64
	// MaxQuantityExponent bounds the magnitude of a decimal exponent
	// ("1e12"): comparing sizes computes 10 to its power.
	MaxQuantityExponent = 1000
)

// quantityPaths are every place a KeyValueStore holds a quantity, as keys
// from the object's root; "*" stands for any key of a map. v1alpha1's
// spec.storage.size and v1beta1's spec.storage.capacity are both checked
// whatever version a request names: the version's decoder ignores the other
// key, so checking it too refuses nothing a client needs. Then the requests
// and limits of each container.
var quantityPaths = func() [][]string {
	paths := [][]string{{"spec", "storage", "size"}, {"spec", "storage", "capacity"}}
	for _, holder := range resourceHolders {
		for _, list := range resourceLists {
			paths = append(paths, append(slices.Clone(holder.names), list, "*"))
		}
	}
	return paths
}()

// resourceHolders are the containers' resources of a KeyValueStore: the
// keys from its root, and the same path in protobuf field numbers
// (generated.proto, alike in v1alpha1 and v1beta1).
var resourceHolders = []struct {
	names   []string
	numbers []uint64
}{
	{[]string{"spec", "resources"}, []uint64{2, 11}},
	{[]string{"spec", "proxy", "resources"}, []uint64{2, 5, 3}},
	{[]string{"spec", "backup", "resources"}, []uint64{2, 6, 7}},
	{[]string{"spec", "bootstrap", "resources"}, []uint64{2, 9, 5}},
}

// resourceLists are the maps of quantities in Resources, in the order of
// their protobuf field numbers (1 and 2).
var resourceLists = []string{"requests", "limits"}

// sizePath is the first of quantityPaths, named in errors about a body that
// cannot be read at all.
var sizePath = quantityPaths[0]

// sizePathIn is where the size lives in an API version, named where the
// body does not say which key it used.
func sizePathIn(version string) []string {
	if version == "v1beta1" {
		return quantityPaths[1]
	}
	return sizePath
}

// unreadableAt is what a refusal of a body the guard cannot read names:
// the size as version spells it for a store, the kind for a body only its
// kind is checked of (a backup, a Scale).
func unreadableAt(version string, quantities bool) *field.Path {
	if !quantities {
		return field.NewPath("kind")
	}
	path := sizePathIn(version)
	return field.NewPath(path[0], path[1:]...)
}

// matches reports whether a key of a body is the pattern's.
func matches(pattern, key string) bool {
	return pattern == "*" || strings.EqualFold(key, pattern)
}

// fieldPathTo names the place keys (matched along pattern) reach, and
// under them the rest of pattern up to its next map: a map's key as [key],
// other keys as the pattern spells them.
func fieldPathTo(pattern, keys []string) *field.Path {
	var p *field.Path
	for i, name := range pattern {
		switch {
		case name == "*" && i >= len(keys):
			return p
		case name == "*":
			p = p.Key(keys[i])
		case p == nil:
			p = field.NewPath(name)
		default:
			p = p.Child(name)
		}
	}
	return p
}

// Check refuses a KeyValueStore request body (an object, or a patch of one)
// of the given Content-Type that names another kind, or whose quantities
// are too long or have too large an exponent, and a JSON patch that copies
// or moves any value into a quantity (its source cannot be checked). It
// looks at every occurrence of a field, a key given twice included:
// decoding into a struct parses each one. It accepts JSON and YAML it
// cannot parse: the decoder then refuses it before it parses any quantity.
func Check(contentType string, body []byte) *field.Error {
	return CheckIn(contentType, body, "")
}

// CheckIn is Check for a request of the given API version: where the body
// does not say which key it used (protobuf, whose field numbers the two
// versions share, or CBOR that does not decode), the refusal names the
// version's own spelling, spec.storage.capacity in v1beta1.
func CheckIn(contentType string, body []byte, version string) *field.Error {
	return check(contentType, body, version, "KeyValueStore", quantityPaths)
}

// CheckKind refuses a body of another resource of the group (a backup, a
// Scale) that names another kind than kind: every resource of the group
// shares one scheme, the decoders build whatever kind a body names, and a
// KeyValueStore (or a list of them) sent there would have its quantities
// parsed, unchecked, before the handler refused the kind.
func CheckKind(contentType string, body []byte, kind string) *field.Error {
	return check(contentType, body, "", kind, nil)
}

// check refuses a body that names another kind than kind, or any of whose
// quantities at patterns is refused.
func check(contentType string, body []byte, version, kind string, patterns [][]string) *field.Error {
	mediaType := runtime.ContentTypeJSON // what the server assumes when none is given
	if contentType != "" {
		mediaType = mediaTypeOf(contentType)
	}
	switch mediaType {
	case runtime.ContentTypeJSON, string(types.MergePatchType), string(types.StrategicMergePatchType):
		return checkJSONDocument(body, kind, patterns)
	case string(types.JSONPatchType):
		return checkJSONPatch(body, kind, patterns)
	case runtime.ContentTypeYAML, string(types.ApplyYAMLPatchType):
		// The decoders turn YAML into JSON first, and so does the guard.
		data, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil
		}
		return checkJSONDocument(data, kind, patterns)
	case runtime.ContentTypeCBOR, string(types.ApplyCBORPatchType):
		return checkCBOR(body, version, kind, patterns)
	case runtime.ContentTypeProtobuf:
		return checkProtobuf(body, version, kind, patterns)
	}
	return nil
}

// checkCBOR checks a CBOR body as decoded into generic values. The CBOR
// decoder refuses a repeated key only once it has decoded the first, so a
// body the guard cannot read is refused here; and one with tag 21, 22 or
// 23 too, under which the generic decoding re-encodes byte strings
// (base64) while a Quantity parses their bytes.
func checkCBOR(body []byte, version, kind string, patterns [][]string) *field.Error {
	unreadable := func(why string) *field.Error {
		return field.TypeInvalid(unreadableAt(version, patterns != nil), nil, "a CBOR body "+why+" is refused before it is decoded")
	}
	if tagged, ok := cborHasTag(body, 21, 22, 23); !ok {
		return unreadable("that does not decode")
	} else if tagged {
		return unreadable("with tag 21, 22 or 23 (an expected later encoding)")
	}
	var doc any
	if err := direct.Unmarshal(body, &doc); err != nil {
		return unreadable("that does not decode (" + err.Error() + ")")
	}
	if m, ok := doc.(map[string]any); ok {
		for k, v := range m {
			if name, ok := v.(string); ok && strings.EqualFold(k, "kind") {
				if err := checkKind(name, kind); err != nil {
					return err
				}
			}
		}
	}
	for _, path := range patterns {
		if err := checkAt(doc, path, nil); err != nil {
			return err
		}
	}
	return nil
}

// mediaTypeOf is the media type the server reads contentType as. Where its
// parameters do not parse, that is the text before the first ";", as the
// PATCH handler takes it (create and update refuse such a header with 415).
func mediaTypeOf(contentType string) string {
	if mediaType, _, err := mime.ParseMediaType(contentType); err == nil {
		return mediaType
	}
	if i := strings.Index(contentType, ";"); i > 0 {
		return contentType[:i]
	}
	return contentType
}

// checkKind refuses a body that names another kind than want: the
// decoders build whatever kind a body names (KeyValueStoreList included,
// whose items hold stores the guard's paths do not reach), and the handler
// refuses the kind only after decoding it. Answered as a body that does not
// decode (400).
func checkKind(kind, want string) *field.Error {
	if kind == "" || kind == want {
		return nil
	}
	return field.TypeInvalid(field.NewPath("kind"), kind, "must be "+want)
}

// checkJSONKind checks every key of the document's root that names its
// kind: the decoders read "kind" case-insensitively, the last one winning.
func checkJSONKind(data []byte, want string) *field.Error {
	if !json.Valid(data) {
		return nil // refused by the decoder
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for d.More() {
		keyTok, err := d.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if d.Decode(&value) != nil {
			return nil
		}
		var kind string
		if key, _ := keyTok.(string); strings.EqualFold(key, "kind") && json.Unmarshal(value, &kind) == nil {
			if err := checkKind(kind, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkJSONDocument checks a JSON object, or a merge patch of one: its
// kind, and every quantity.
func checkJSONDocument(data []byte, kind string, patterns [][]string) *field.Error {
	if err := checkJSONKind(data, kind); err != nil {
		return err
	}
	return checkJSONPaths(data, patterns)
}

// checkJSONPaths checks every quantity at patterns of a JSON document.
func checkJSONPaths(data []byte, patterns [][]string) *field.Error {
	for _, path := range patterns {
		if err := checkJSON(data, path, nil); err != nil {
			return err
		}
	}
	return nil
}

// checkJSON checks every value of a JSON document that the rest of pattern
// reaches, the document being what keys (matched along pattern) lead to.
// Keys match case-insensitively, a superset of what any decoder matches;
// numbers keep their text, which is what Quantity parses.
func checkJSON(data []byte, pattern, keys []string) *field.Error {
	if !json.Valid(data) {
		return nil // refused by the decoder, which validates before it decodes anything
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	err, _ := walkJSON(d, pattern, keys, true)
	return err
}

// walkJSON reads one value: one on the path (onPath) is followed by its
// keys that match the rest of pattern, and checked where pattern ends; any
// other is skipped. ok is false for broken JSON.
func walkJSON(d *json.Decoder, pattern, keys []string, onPath bool) (err *field.Error, ok bool) {
	if !onPath {
		// Decoding skips a value faster than reading its tokens.
		var skipped json.RawMessage
		return nil, d.Decode(&skipped) == nil
	}
	rest := pattern[len(keys):]
	tok, tokErr := d.Token()
	if tokErr != nil {
		return nil, false
	}
	delim, isDelim := tok.(json.Delim)
	if !isDelim {
		if len(rest) == 0 {
			return checkQuantity(tok, fieldPathTo(pattern, keys)), true
		}
		return nil, true
	}
	switch delim {
	case '{':
		for d.More() {
			keyTok, tokErr := d.Token()
			if tokErr != nil {
				return nil, false
			}
			key, _ := keyTok.(string)
			follow := len(rest) > 0 && matches(rest[0], key)
			next := keys
			if follow {
				next = append(slices.Clone(keys), key)
			}
			if err, ok = walkJSON(d, pattern, next, follow); err != nil || !ok {
				return err, ok
			}
		}
	case '[':
		for d.More() {
			if _, ok = walkJSON(d, nil, nil, false); !ok {
				return nil, false
			}
		}
	}
	if _, tokErr = d.Token(); tokErr != nil { // the closing delimiter
		return nil, false
	}
	return nil, true
}

// checkAt checks every value reached from v by the rest of pattern (a
// decoded CBOR document, whose decoder refuses repeated keys).
func checkAt(v any, pattern, keys []string) *field.Error {
	if len(keys) == len(pattern) {
		return checkQuantity(v, fieldPathTo(pattern, keys))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if matches(pattern[len(keys)], k) {
			if err := checkAt(m[k], pattern, append(slices.Clone(keys), k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkJSONPatch checks what add and replace operations write at or above
// a quantity, and refuses copy and move operations to there. Like the JSON
// patch library, it reads each operation's members once (the last of a
// repeated one); the values it writes are checked whole.
func checkJSONPatch(body []byte, kind string, patterns [][]string) *field.Error {
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil
	}
	for _, op := range ops {
		var name, path string
		if json.Unmarshal(op["op"], &name) != nil || json.Unmarshal(op["path"], &path) != nil {
			continue
		}
		tokens := pointerTokens(path)
		if err := checkJSONPatchKind(name, tokens, op["value"], kind); err != nil {
			return err
		}
		for _, pattern := range patterns {
			if !above(tokens, pattern) {
				continue
			}
			switch name {
			case "add", "replace":
				if err := checkJSON(op["value"], pattern, tokens); err != nil {
					return err
				}
			case "copy", "move":
				return field.Forbidden(fieldPathTo(pattern, tokens),
					fmt.Sprintf("a JSON patch may not %s a value to %q, which holds quantities; set them with add or replace", name, path))
			}
		}
	}
	return nil
}

// checkJSONPatchKind refuses an operation that makes the object another
// kind: writing /kind (any case: the decoders read it so) other than
// want, copying or moving a value there, or replacing the whole
// object with one of another kind.
func checkJSONPatchKind(op string, tokens []string, value json.RawMessage, want string) *field.Error {
	switch {
	case len(tokens) == 0 && (op == "add" || op == "replace"):
		return checkJSONKind(value, want)
	case len(tokens) == 1 && strings.EqualFold(tokens[0], "kind"):
		switch op {
		case "add", "replace":
			var kind string
			if json.Unmarshal(value, &kind) == nil {
				return checkKind(kind, want)
			}
		case "copy", "move":
			return field.Forbidden(field.NewPath("kind"), "a JSON patch may not "+op+" a value to the object's kind")
		}
	}
	return nil
}

// pointerTokens splits a JSON pointer as the JSON patch library does: the
// first segment is dropped whatever it holds, ~1 and ~0 are unescaped.
func pointerTokens(pointer string) []string {
	parts := strings.Split(pointer, "/")[1:]
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

// above reports whether tokens address a place pattern reaches or one of
// its ancestors.
func above(tokens, pattern []string) bool {
	if len(tokens) > len(pattern) {
		return false
	}
	for i, t := range tokens {
		if !matches(pattern[i], t) {
			return false
		}
	}
	return true
}

// checkQuantity refuses a quantity, quoted or not, that is too long or has
// too large an exponent. Values of other types are the decoder's to refuse.
func checkQuantity(v any, fldPath *field.Path) *field.Error {
	var s string
	switch q := v.(type) {
	case string:
		s = q
	case json.Number:
		s = q.String()
	case []byte:
		s = string(q)
	default:
		return nil
	}
	s = strings.TrimSpace(s)
	if len(s) > MaxQuantityLength {
		return field.TooLong(fldPath, s[:MaxQuantityLength]+"...", MaxQuantityLength)
	}
	if exp, ok := exponent(s); ok && (exp <= -MaxQuantityExponent || exp >= MaxQuantityExponent) {
		return field.Invalid(fldPath, s, fmt.Sprintf("the exponent must be between -%d and %d, exclusive", MaxQuantityExponent, MaxQuantityExponent))
	}
	return nil
}

// exponent returns the decimal exponent of a quantity ("1e12", "5E-3"), as
// ParseQuantity reads it: after the sign, digits and decimal point, an "e"
// or "E" and then the rest. An exponent too large for an int64 is returned
// as the largest one.
func exponent(s string) (int64, bool) {
	i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("+-0123456789.", r) })
	if i < 0 || (s[i] != 'e' && s[i] != 'E') || i+1 == len(s) {
		return 0, false
	}
	digits := s[i+1:]
	exp, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if strings.HasPrefix(digits, "-") {
				return -1 << 63, true
			}
			return 1<<63 - 1, true
		}
		return 0, false
	}
	return exp, true
}
