package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apiserver"
	"github.com/kvstore-io/kvstore-apiserver/pkg/cmd/server"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
)

// The "attack and input" cases: bodies too large, too deep, self-expanding,
// of the wrong type or broken, to every kind of write. Each must be refused
// with a 4xx, and leave the server up and the stored store as it was.

const (
	// nestingDepth is how deep the nested documents go: encoding/json's (and
	// so sigs.k8s.io/json's) own limit is 10,000.
	nestingDepth = 10000
	// victim is the store every update and patch is aimed at.
	victim = "victim"
)

// hostileRequest is one write with a raw body: a create of a new store, or
// an update, patch or delete of the victim (or its /status or /scale).
type hostileRequest struct {
	method      string
	collection  bool   // POST to the collection instead of the victim
	subresource string // "", "status" or "scale"
	contentType string
	query       string
	body        []byte
}

func create(contentType string, body []byte) hostileRequest {
	return hostileRequest{method: http.MethodPost, collection: true, contentType: contentType, body: body}
}

func update(subresource, contentType string, body []byte) hostileRequest {
	return hostileRequest{method: http.MethodPut, subresource: subresource, contentType: contentType, body: body}
}

func patch(subresource string, pt types.PatchType, body []byte) hostileRequest {
	return hostileRequest{method: http.MethodPatch, subresource: subresource, contentType: string(pt), body: body}
}

// remove is a delete of the victim with a body (DeleteOptions).
func remove(contentType string, body []byte) hostileRequest {
	return hostileRequest{method: http.MethodDelete, contentType: contentType, body: body}
}

// withQuery adds a query string, e.g. fieldValidation=Strict.
func (r hostileRequest) withQuery(q string) hostileRequest {
	r.query = q
	return r
}

// send makes the request through the loopback config and returns the status
// code and the response body.
func (r hostileRequest) send(t *testing.T, namespace string) (int, []byte) {
	t.Helper()
	path := "/apis/kvstore.io/v1alpha1/namespaces/" + namespace + "/keyvaluestores"
	if !r.collection {
		path += "/" + victim
		if r.subresource != "" {
			path += "/" + r.subresource
		}
	}
	if r.query != "" {
		path += "?" + r.query
	}
	return rawRequest(t, r.method, path, r.contentType, r.body)
}

func rawRequest(t *testing.T, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(config)
	require.NoError(t, err)
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, config.Host+path, reader)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

// storeJSON is a valid store named name; metadata and top add members to
// metadata and to the top-level object ("" adds none).
func storeJSON(name, metadata, top string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":%q%s},"spec":{"image":"redis:7.2"}%s}`,
		name, metadata, top)
}

// paddedStoreJSON is a valid store whose JSON is exactly size bytes long,
// padded with an annotation.
func paddedStoreJSON(name string, size int) []byte {
	empty := len(storeJSON(name, `,"annotations":{"pad":""}`, ""))
	return storeJSON(name, `,"annotations":{"pad":"`+strings.Repeat("x", size-empty)+`"}`, "")
}

func nestedArrays(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func nestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// billionLaughs is a YAML store whose aliases expand 9^9 times, inside an
// unknown spec field.
func billionLaughs(name string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kvstore.io/v1alpha1\nkind: KeyValueStore\nmetadata:\n  name: %s\nspec:\n  image: redis:7.2\n", name)
	b.WriteString("  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for c := 'b'; c <= 'i'; c++ {
		prev := "*" + string(c-1)
		fmt.Fprintf(&b, "  %c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat(prev+",", 9), ","))
	}
	return []byte(b.String())
}

// protobufEnvelope wraps raw in the Kubernetes protobuf envelope as a
// kvstore.io/v1alpha1 KeyValueStore.
func protobufEnvelope(t *testing.T, raw []byte) []byte {
	t.Helper()
	u := &runtime.Unknown{
		TypeMeta: runtime.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "KeyValueStore"},
		Raw:      raw,
	}
	data, err := u.Marshal()
	require.NoError(t, err)
	return append([]byte(protobufMagic), data...)
}

// storeWithSize is a store named name with spec.storage.size set to the JSON
// value size.
func storeWithSize(name, size string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":%q},"spec":{"image":"redis:7.2","storage":{"size":%s}}}`, name, size)
}

// protobufStoreWithSize is a protobuf store whose spec.storage.size is the
// string size, written field by field: resource.Quantity cannot hold such a
// value to be encoded.
func protobufStoreWithSize(t *testing.T, size string) []byte {
	t.Helper()
	meta, err := (&metav1.ObjectMeta{Name: "pb"}).Marshal()
	require.NoError(t, err)
	quantity := protobufField(1, []byte(size))                                          // Quantity.string
	storage := protobufField(1, quantity)                                               // StorageSpec.size
	spec := append(protobufField(2, []byte("redis:7.2")), protobufField(4, storage)...) // KeyValueStoreSpec.image, .storage
	kvs := append(protobufField(1, meta), protobufField(2, spec)...)                    // KeyValueStore.metadata, .spec
	return protobufEnvelope(t, kvs)
}

// protobufField is a length-delimited protobuf field.
func protobufField(num uint64, value []byte) []byte {
	out := binary.AppendUvarint(nil, num<<3|2)
	out = binary.AppendUvarint(out, uint64(len(value)))
	return append(out, value...)
}

// protobufStore is the victim, valid, as a protobuf body.
func protobufStore(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(apiserver.Scheme, apiserver.Scheme).Encode(newKVS(victim), &buf))
	return buf.Bytes()
}

// requireServerIntact requires /readyz to pass, the victim to be exactly as
// it was and no other store to exist.
func requireServerIntact(t *testing.T, namespace string, before *v1alpha1.KeyValueStore) {
	t.Helper()
	status, body := rawRequest(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusOK, status, "/readyz: %s", body)
	kvsClient := client.KvstoreV1alpha1().KeyValueStores(namespace)
	got, err := kvsClient.Get(context.Background(), victim, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, apiequality.Semantic.DeepEqual(before, got), "the victim changed:\nbefore: %#v\nafter:  %#v", before, got)
	list, err := kvsClient.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1, "a refused create must store nothing")
}

// TestHostileInput sends each hostile body and requires the status code the
// table names (never a 5xx), then that the server is intact.
func TestHostileInput(t *testing.T) {
	namespace := ns(t)
	before, err := client.KvstoreV1alpha1().KeyValueStores(namespace).Create(context.Background(), newKVS(victim), metav1.CreateOptions{})
	require.NoError(t, err)

	const (
		jsonType      = "application/json"
		yamlType      = "application/yaml"
		deepMessage   = "exceeded max depth"
		strict        = "fieldValidation=Strict"
		tooLarge      = http.StatusRequestEntityTooLarge
		badRequest    = http.StatusBadRequest
		unsupported   = http.StatusUnsupportedMediaType
		unprocessable = http.StatusUnprocessableEntity
	)
	valid := storeJSON(victim, "", "")
	pbValid := protobufStore(t)
	truncated := valid[:len(valid)/2]
	deepArrays := nestedArrays(nestingDepth)
	deepObjects := nestedObjects(nestingDepth)

	cases := []struct {
		name string
		req  hostileRequest
		want int
		// message is part of the refusal's message, if given.
		message string
	}{
		// Size. One byte over the limit is refused before decoding;
		// exactly the limit is decoded (and then refused: the annotation
		// is over the 256 KiB annotation limit).
		{"create at the body limit", create(jsonType, paddedStoreJSON("big", server.MaxRequestBodyBytes)), unprocessable, "metadata.annotations: Too long"},
		{"create over the body limit", create(jsonType, paddedStoreJSON("big", server.MaxRequestBodyBytes+1)), tooLarge, ""},
		{"create over the body limit, protobuf", create(protobufType, append(pbValid, bytes.Repeat([]byte{0}, server.MaxRequestBodyBytes)...)), tooLarge, ""},
		{"update over the body limit", update("", jsonType, paddedStoreJSON(victim, server.MaxRequestBodyBytes+1)), tooLarge, ""},
		{"status update over the body limit", update("status", jsonType, paddedStoreJSON(victim, server.MaxRequestBodyBytes+1)), tooLarge, ""},
		{"merge patch over the body limit", patch("", types.MergePatchType, paddedStoreJSON(victim, server.MaxRequestBodyBytes+1)), tooLarge, ""},
		{"apply over the body limit", patch("", types.ApplyYAMLPatchType, paddedStoreJSON(victim, server.MaxRequestBodyBytes+1)).withQuery("fieldManager=a"), tooLarge, ""},
		{"delete options over the body limit", remove(jsonType, fmt.Appendf(nil, `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["%s"]}`, strings.Repeat("x", server.MaxRequestBodyBytes))), tooLarge, ""},
		{"scale patch over the body limit", patch("scale", types.MergePatchType, paddedStoreJSON(victim, server.MaxRequestBodyBytes+1)), tooLarge, ""},

		// Depth.
		{"create, nested arrays in an unknown field", create(jsonType, storeJSON("deep", "", `,"extra":`+deepArrays)), badRequest, deepMessage},
		{"create, nested objects in an unknown field", create(jsonType, storeJSON("deep", "", `,"extra":`+deepObjects)), badRequest, deepMessage},
		{"create, nested arrays in metadata.labels", create(jsonType, storeJSON("deep", `,"labels":{"a":`+deepArrays+`}`, "")), badRequest, deepMessage},
		{"create, nested objects in metadata.labels", create(jsonType, storeJSON("deep", `,"labels":`+deepObjects, "")), badRequest, deepMessage},
		{"create, nested objects in managedFields", create(jsonType, storeJSON("deep", `,"managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":`+deepObjects+`}]`, "")), badRequest, deepMessage},
		{"update, nested arrays in an unknown field", update("", jsonType, storeJSON(victim, "", `,"extra":`+deepArrays)), badRequest, deepMessage},
		{"status update, nested objects in metadata.labels", update("status", jsonType, storeJSON(victim, `,"labels":`+deepObjects, "")), badRequest, deepMessage},
		{"create, nested arrays in YAML", create(yamlType, fmt.Appendf(nil, "apiVersion: kvstore.io/v1alpha1\nkind: KeyValueStore\nmetadata:\n  name: deep\nspec:\n  image: redis:7.2\n  extra: %s\n", deepArrays)), badRequest, ""},
		{"merge patch, nested arrays", patch("", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":`+deepArrays+`}}}`)), badRequest, "invalid JSON"},
		{"strategic merge patch, nested objects", patch("", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":`+deepObjects+`}}`)), badRequest, "invalid JSON"},
		{"JSON patch, nested arrays", patch("", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels","value":`+deepArrays+`}]`)), badRequest, "invalid JSON"},
		{"apply, nested objects", patch("", types.ApplyYAMLPatchType, storeJSON(victim, `,"labels":`+deepObjects, "")).withQuery("fieldManager=a"), badRequest, ""},

		// Self-expanding YAML.
		{"create, billion laughs", create(yamlType, billionLaughs("laughs")), badRequest, "excessive aliasing"},
		{"update, billion laughs", update("", yamlType, billionLaughs(victim)), badRequest, "excessive aliasing"},
		{"apply, billion laughs", patch("", types.ApplyYAMLPatchType, billionLaughs(victim)).withQuery("fieldManager=a"), badRequest, "excessive aliasing"},

		// Sizes that would cost the quantity parser (or the first
		// comparison) minutes to hours of CPU and gigabytes of memory.
		{"create, size with a huge negative exponent", create(jsonType, storeWithSize("neg", `"1e-99999999"`)), unprocessable, "spec.storage.size: Invalid value"},
		{"create, size with a huge negative exponent, unquoted", create(jsonType, storeWithSize("neg", `1e-99999999`)), unprocessable, "spec.storage.size: Invalid value"},
		{"create, size with a huge negative exponent, escaped", create(jsonType, storeWithSize("neg", `"1\u0065-99999999"`)), unprocessable, "spec.storage.size: Invalid value"},
		{"create, size with an exponent beyond int32", create(jsonType, storeWithSize("wraps", `"1e99999999999"`)), unprocessable, "spec.storage.size: Invalid value"},
		{"create, size with a large exponent", create(jsonType, storeWithSize("big", `"1e2147483647"`)), unprocessable, "spec.storage.size: Invalid value"},
		{"create, size of 65 digits", create(jsonType, storeWithSize("long", `"0.`+strings.Repeat("0", 62)+`1"`)), unprocessable, "spec.storage.size: Too long"},
		{"create, size over the limit", create(jsonType, storeWithSize("huge", `"10E"`)), unprocessable, "spec.storage.size: Invalid value: \"10E\": must be at most"},
		{"create, size with a huge exponent, YAML", create(yamlType, []byte("apiVersion: kvstore.io/v1alpha1\nkind: KeyValueStore\nmetadata:\n  name: neg\nspec:\n  image: redis:7.2\n  storage:\n    size: \"1\\x65-99999999\"\n")), unprocessable, "spec.storage.size: Invalid value"},
		{"create, size with a huge exponent, protobuf", create(protobufType, protobufStoreWithSize(t, "1e-99999999")), unprocessable, "spec.storage.size: Invalid value"},
		{"update, size with a huge exponent", update("", jsonType, storeWithSize(victim, `"1e-99999999"`)), unprocessable, "spec.storage.size: Invalid value"},
		{"status update, size with a huge exponent", update("status", jsonType, storeWithSize(victim, `"1e-99999999"`)), unprocessable, "spec.storage.size: Invalid value"},
		{"merge patch, size with a huge exponent", patch("", types.MergePatchType, []byte(`{"spec":{"storage":{"size":"1e-99999999"}}}`)), unprocessable, "spec.storage.size: Invalid value"},
		{"strategic merge patch, size with a huge exponent", patch("", types.StrategicMergePatchType, []byte(`{"spec":{"storage":{"$patch":"replace","size":"1e-99999999"}}}`)), unprocessable, "spec.storage.size: Invalid value"},
		{"strategic merge patch to /status, size with a huge exponent", patch("status", types.StrategicMergePatchType, []byte(`{"spec":{"storage":{"size":"1e-99999999"}}}`)), unprocessable, "spec.storage.size: Invalid value"},
		{"apply, size with a huge exponent", patch("", types.ApplyYAMLPatchType, storeWithSize(victim, `"1e-99999999"`)).withQuery("fieldManager=a"), unprocessable, "spec.storage.size: Invalid value"},
		{"JSON patch, size with a huge exponent", patch("", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/storage/size","value":"1e-99999999"}]`)), unprocessable, "spec.storage.size: Invalid value"},
		{"JSON patch, spec with a huge exponent", patch("", types.JSONPatchType, []byte(`[{"op":"add","path":"/spec","value":{"image":"redis:7.2","storage":{"size":"1e-99999999"}}}]`)), unprocessable, "spec.storage.size: Invalid value"},
		// The requests and limits of every container are quantities too.
		{"create, cpu request with a huge exponent", create(jsonType, []byte(`{"apiVersion":"kvstore.io/v1beta1","kind":"KeyValueStore","metadata":{"name":"cpu"},"spec":{"image":"redis:7.2","resources":{"requests":{"cpu":"1e-99999999"}}}}`)), unprocessable, "spec.resources.requests[cpu]: Invalid value"},
		{"merge patch, proxy limit with a huge exponent", patch("", types.MergePatchType, []byte(`{"spec":{"proxy":{"resources":{"limits":{"memory":"1e2147483647"}}}}}`)), unprocessable, "spec.proxy.resources.limits[memory]: Invalid value"},
		{"JSON patch, bootstrap request copied from a label", patch("", types.JSONPatchType, []byte(`[{"op":"copy","from":"/metadata/labels","path":"/spec/bootstrap/resources/requests"}]`)), unprocessable, "spec.bootstrap.resources.requests: Forbidden"},
		{"create, a list of stores with a huge exponent", create(jsonType, []byte(`{"apiVersion":"kvstore.io/v1beta1","kind":"KeyValueStoreList","items":[{"spec":{"storage":{"capacity":"1e-99999999"}}}]}`)), badRequest, "kind: Invalid value: \"KeyValueStoreList\": must be KeyValueStore"},
		{"update of /scale, a store with a huge exponent", update("scale", jsonType, storeWithSize(victim, `"1e-99999999"`)), badRequest, "kind: Invalid value: \"KeyValueStore\": must be Scale"},
		{"JSON patch, size copied from a label", patch("", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels","value":{"size":"1e-99999999"}},{"op":"copy","from":"/metadata/labels","path":"/spec/storage"}]`)), unprocessable, "spec.storage.size: Forbidden"},

		// Protobuf that is not a KeyValueStore.
		{"create, protobuf without the envelope", create(protobufType, []byte("\x0a\xff\xff\xff\xff\x0fgarbage")), badRequest, ""},
		{"create, protobuf envelope of garbage", create(protobufType, []byte(protobufMagic+"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")), badRequest, ""},
		{"create, protobuf store of garbage", create(protobufType, protobufEnvelope(t, []byte("\x0a\xff\xff\xff\xff\x0f\x01"))), badRequest, ""},
		{"create, protobuf store with an overlong length", create(protobufType, protobufEnvelope(t, []byte("\x12\xff\xff\xff\xff\xff\xff\xff\xff\x7f"))), badRequest, ""},
		{"create, truncated protobuf", create(protobufType, pbValid[:len(pbValid)-7]), badRequest, ""},
		{"update, protobuf of garbage", update("", protobufType, []byte(protobufMagic+"garbage")), badRequest, ""},
		{"status update, protobuf of garbage", update("status", protobufType, protobufEnvelope(t, []byte("\x1a\x03\xff"))), badRequest, ""},
		{"scale update, protobuf of garbage", update("scale", protobufType, []byte(protobufMagic+"garbage")), badRequest, ""},

		// Content types the server does not speak.
		{"create, text/plain", create("text/plain", valid), unsupported, ""},
		{"create, application/xml", create("application/xml", []byte(`<KeyValueStore><metadata><name>x</name></metadata></KeyValueStore>`)), unsupported, ""},
		{"update, text/plain", update("", "text/plain", valid), unsupported, ""},
		{"scale update, application/xml", update("scale", "application/xml", []byte(`<Scale/>`)), unsupported, ""},
		{"patch, application/json", patch("", types.PatchType(jsonType), []byte(`{"metadata":{"labels":{"a":"b"}}}`)), unsupported, ""},
		{"patch, protobuf", patch("", types.PatchType(protobufType), pbValid), unsupported, ""},
		{"patch, text/plain", patch("", "text/plain", []byte(`{}`)), unsupported, ""},

		// Broken JSON and JSON of the wrong shape.
		{"create, truncated JSON", create(jsonType, truncated), badRequest, ""},
		{"create, empty body", create(jsonType, []byte{}), badRequest, ""},
		{"create, JSON null", create(jsonType, []byte("null")), unprocessable, "metadata.name: Required value"},
		{"create, JSON array", create(jsonType, []byte(`[1,2,3]`)), badRequest, ""},
		{"create, JSON string", create(jsonType, []byte(`"KeyValueStore"`)), badRequest, ""},
		{"create, replicas of the wrong type", create(jsonType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"typed"},"spec":{"image":"redis:7.2","replicas":"three"}}`)), badRequest, ""},
		{"create, replicas out of int32", create(jsonType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"typed"},"spec":{"image":"redis:7.2","replicas":4294967299}}`)), badRequest, ""},
		{"create, size not a quantity", create(jsonType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"typed"},"spec":{"image":"redis:7.2","storage":{"size":"1Gb"}}}`)), badRequest, "quantities must match"},
		{"create, another kind", create(jsonType, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod"}}`)), badRequest, ""},
		{"update, truncated JSON", update("", jsonType, truncated), badRequest, ""},
		{"status update, truncated JSON", update("status", jsonType, truncated), badRequest, ""},
		{"scale update, truncated JSON", update("scale", jsonType, []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":`)), badRequest, ""},
		{"create, duplicate fields, strict", create(jsonType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"dup","name":"dup2"},"spec":{"image":"redis:7.2"}}`)).withQuery(strict), badRequest, `duplicate field "metadata.name"`},
		{"update, duplicate fields, strict", update("", jsonType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"victim"},"spec":{"image":"redis:7.2","image":"redis:7.4"}}`)).withQuery(strict), badRequest, `duplicate field "spec.image"`},

		// Malformed patches.
		{"JSON patch, truncated", patch("", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":5}`)), badRequest, ""},
		{"JSON patch, not a list", patch("", types.JSONPatchType, []byte(`{"op":"replace","path":"/spec/replicas","value":5}`)), badRequest, ""},
		{"JSON patch, unknown operation", patch("", types.JSONPatchType, []byte(`[{"op":"explode","path":"/spec"}]`)), unprocessable, ""},
		{"JSON patch, missing path", patch("", types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/nothere"}]`)), unprocessable, ""},
		{"JSON patch, failing test", patch("", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/image","value":"nope"},{"op":"replace","path":"/spec/image","value":"redis:9"}]`)), unprocessable, ""},
		{"JSON patch, value of the wrong type", patch("", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":"three"}]`)), unprocessable, "cannot unmarshal"},
		{"JSON patch, too many operations", patch("", types.JSONPatchType, []byte("["+strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/kind","value":"KeyValueStore"},`, 10001), ",")+"]")), tooLarge, ""},
		{"JSON patch, copies beyond the copy limit", patch("", types.JSONPatchType, copyBomb(8)), unprocessable, ""},
		{"JSON patch to /status, truncated", patch("status", types.JSONPatchType, []byte(`[{"op":`)), badRequest, ""},
		{"JSON patch to /scale, wrong type", patch("scale", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":{}}]`)), unprocessable, "cannot unmarshal"},
		{"merge patch, truncated", patch("", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":`)), badRequest, ""},
		{"merge patch, a list", patch("", types.MergePatchType, []byte(`[1,2,3]`)), badRequest, ""},
		{"merge patch, spec of the wrong type", patch("", types.MergePatchType, []byte(`{"spec":"nothing"}`)), unprocessable, "cannot unmarshal"},
		{"merge patch to /scale, replicas of the wrong type", patch("scale", types.MergePatchType, []byte(`{"spec":{"replicas":"five"}}`)), unprocessable, "cannot unmarshal"},
		{"strategic merge patch to /scale, selector not a selector", patch("scale", types.StrategicMergePatchType, []byte(`{"status":{"selector":"a in (b"}}`)), badRequest, ""},
		{"strategic merge patch to /scale, unknown directive", patch("scale", types.StrategicMergePatchType, []byte(`{"spec":{"$patch":"explode"}}`)), badRequest, ""},
		{"strategic merge patch, truncated", patch("", types.StrategicMergePatchType, []byte(`{"spec":`)), badRequest, ""},
		{"strategic merge patch, unknown directive", patch("", types.StrategicMergePatchType, []byte(`{"spec":{"$patch":"explode"}}`)), badRequest, ""},
		{"strategic merge patch, retainKeys of a non-list", patch("", types.StrategicMergePatchType, []byte(`{"spec":{"$retainKeys":7}}`)), badRequest, ""},
		{"strategic merge patch, element order of a non-list", patch("", types.StrategicMergePatchType, []byte(`{"metadata":{"$setElementOrder/finalizers":{"a":1}}}`)), badRequest, ""},
		// An element order for a list of objects without a merge key
		// (an atomic list) panics in k8s.io/apimachinery's merge
		// (comparing maps): served as 500, or 503 through the aggregator,
		// with a stack trace in the log (found by review).
		{"strategic merge patch, element order of an atomic list of objects", patch("", types.StrategicMergePatchType, []byte(
			`{"spec":{"$setElementOrder/imagePullSecrets":[{"name":"a"}],"imagePullSecrets":[{"name":"a"}]}}`)), badRequest, ""},
		{"strategic merge patch, element order of the data container's envFrom", patch("", types.StrategicMergePatchType, []byte(
			`{"spec":{"$setElementOrder/envFrom":[{"prefix":"a"}],"envFrom":[{"prefix":"a","secretRef":{"name":"s"}}]}}`)), badRequest, ""},
		{"strategic merge patch to /status, a list", patch("status", types.StrategicMergePatchType, []byte(`[{"status":{}}]`)), badRequest, ""},
		{"apply, not YAML", patch("", types.ApplyYAMLPatchType, []byte("a: : :\n\t- b")).withQuery("fieldManager=a"), badRequest, ""},
		{"apply, no field manager", patch("", types.ApplyYAMLPatchType, valid), unprocessable, "fieldManager"},
		{"apply, replicas of the wrong type", patch("", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"victim"},"spec":{"replicas":"three"}}`)).withQuery("fieldManager=a"), badRequest, ""},
		{"apply to /status, phase of the wrong type", patch("status", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"victim"},"status":{"phase":["Ready"]}}`)).withQuery("fieldManager=a"), badRequest, ""},
		{"strategic merge patch, list of a map", patch("", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":["a"]}}`)), unprocessable, "cannot restore map from slice"},
		{"strategic merge patch, map of a list", patch("", types.StrategicMergePatchType, []byte(`{"metadata":{"finalizers":{"a":"b"}}}`)), unprocessable, "cannot restore slice from map"},
		{"apply to /scale, truncated", patch("scale", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":`)).withQuery("fieldManager=a"), badRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.req.send(t, namespace)
			msg := string(body[:min(len(body), 1024)])
			var st metav1.Status
			if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
				msg = st.Message[:min(len(st.Message), 1024)]
			}
			assert.Less(t, status, 500, "a 5xx: %s", msg)
			assert.Equal(t, tc.want, status, "%s", msg)
			if tc.message != "" {
				assert.Contains(t, msg, tc.message)
			}
			requireServerIntact(t, namespace, before)
		})
	}
}

// copyBomb is a small JSON patch that copies one 512 KiB value n times,
// to unknown fields, which decoding drops: only the 3 MiB copy limit can
// refuse it.
func copyBomb(n int) []byte {
	ops := []string{`{"op":"add","path":"/spec/junk","value":"` + strings.Repeat("x", 512*1024) + `"}`}
	for i := range n {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec/junk","path":"/spec/junk%d"}`, i))
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// TestJSONPatchCopyLimit: what refuses copyBomb(8) in TestHostileInput is
// the copy limit, not the patch: five copies (2.5 MiB) are served.
func TestJSONPatchCopyLimit(t *testing.T) {
	namespace := ns(t)
	before, err := client.KvstoreV1alpha1().KeyValueStores(namespace).Create(context.Background(), newKVS(victim), metav1.CreateOptions{})
	require.NoError(t, err)
	status, body := patch("", types.JSONPatchType, copyBomb(5)).send(t, namespace)
	require.Equal(t, http.StatusOK, status, "%.1000s", body)
	requireServerIntact(t, namespace, before)
	status, _ = patch("", types.JSONPatchType, copyBomb(7)).send(t, namespace)
	require.Equal(t, http.StatusUnprocessableEntity, status)
}

// TestDuplicateFieldsWarn: without fieldValidation=Strict, a body with a
// field given twice is served as every Kubernetes API serves it (the last
// value wins) with a warning naming the field, never silently. Strict
// refuses it (TestHostileInput).
func TestDuplicateFieldsWarn(t *testing.T) {
	warned := &warnings{}
	c := rest.CopyConfig(config)
	c.WarningHandlerWithContext = warned
	cs, err := versioned.NewForConfig(c)
	require.NoError(t, err)
	body := []byte(`{"apiVersion":"kvstore.io/v1alpha1","kind":"KeyValueStore","metadata":{"name":"dup"},"spec":{"image":"redis:7.2","image":"redis:7.4"}}`)
	out := &v1alpha1.KeyValueStore{}
	err = cs.KvstoreV1alpha1().RESTClient().Post().Namespace(ns(t)).Resource("keyvaluestores").
		SetHeader("Content-Type", "application/json").Body(body).Do(context.Background()).Into(out)
	require.NoError(t, err)
	assert.Equal(t, "redis:7.4", out.Spec.Image, "the last value wins")
	assert.Contains(t, strings.Join(warned.get(), "\n"), `duplicate field "spec.image"`)
}
