package quantityguard

import (
	"bytes"
	"encoding/binary"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// protobufSizePath is sizePath in protobuf field numbers (generated.proto):
// runtime.Unknown.raw, KeyValueStore.spec, KeyValueStoreSpec.storage,
// StorageSpec.size, and resource.Quantity's one string field. v1beta1's
// StorageSpec.capacity has the same number, so one path serves both versions.
var protobufSizePath = []uint64{2, 2, 4, 1, 1}

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte("k8s\x00")

// checkProtobuf checks every spec.storage.size of a protobuf KeyValueStore,
// also those a repeated field would merge, and names path in its refusal.
func checkProtobuf(body []byte, path []string) *field.Error {
	var err *field.Error
	eachProtobufSize(body, func(size string) bool {
		err = checkQuantity(size, path)
		return err == nil
	})
	return err
}

// eachProtobufSize calls f, in the order the decoder parses them, with
// every spec.storage.size a protobuf KeyValueStore body holds, until f
// returns false.
func eachProtobufSize(body []byte, f func(string) bool) {
	raw, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return
	}
	var walk func(msg []byte, path []uint64) bool
	walk = func(msg []byte, path []uint64) bool {
		if len(path) == 0 {
			return f(string(msg))
		}
		more := true
		eachLengthDelimited(msg, path[0], func(value []byte) bool {
			more = walk(value, path[1:])
			return more
		})
		return more
	}
	walk(raw, protobufSizePath)
}

// eachLengthDelimited calls f, in order, with the value of every
// length-delimited field numbered num in msg, until f returns false. It
// stops at the first malformed field: the decoder fails there too, and has
// parsed no field after it.
func eachLengthDelimited(msg []byte, num uint64, f func([]byte) bool) {
	for len(msg) > 0 {
		tag, n := binary.Uvarint(msg)
		if n <= 0 {
			return
		}
		msg = msg[n:]
		fieldNum, wireType := tag>>3, tag&7
		var value []byte
		switch wireType {
		case 0: // varint
			if _, n = binary.Uvarint(msg); n <= 0 {
				return
			}
		case 1: // fixed64
			n = 8
		case 5: // fixed32
			n = 4
		case 2: // length-delimited
			length, m := binary.Uvarint(msg)
			if m <= 0 || length > uint64(len(msg)-m) {
				return
			}
			value = msg[m : m+int(length)]
			n = m + int(length)
		case 3: // a group, skipped as the generated decoders skip it
			if n = skipGroup(msg); n < 0 {
				return
			}
		default:
			return
		}
		if n > len(msg) {
			return
		}
		msg = msg[n:]
		if wireType == 2 && fieldNum == num && !f(value) {
			return
		}
	}
}

// skipGroup returns the length of a group's fields up to and including its
// end tag, or -1 if it is malformed.
func skipGroup(msg []byte) int {
	depth, pos := 1, 0
	for depth > 0 {
		tag, n := binary.Uvarint(msg[pos:])
		if n <= 0 {
			return -1
		}
		pos += n
		switch tag & 7 {
		case 0:
			if _, n = binary.Uvarint(msg[pos:]); n <= 0 {
				return -1
			}
			pos += n
		case 1:
			pos += 8
		case 5:
			pos += 4
		case 2:
			length, m := binary.Uvarint(msg[pos:])
			if m <= 0 || length > uint64(len(msg)-pos-m) {
				return -1
			}
			pos += m + int(length)
		case 3:
			depth++
		case 4:
			depth--
		default:
			return -1
		}
		if pos > len(msg) {
			return -1
		}
	}
	return pos
}
