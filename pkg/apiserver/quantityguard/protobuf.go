package quantityguard

import (
	"bytes"
	"encoding/binary"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// protobufPath is a quantity's place in a protobuf KeyValueStore: the JSON
// keys of quantityPaths and, for each, the field number (generated.proto;
// v1alpha1 and v1beta1 number alike, v1beta1's spec.storage.capacity as
// v1alpha1's size). At a map ("*") the current message is one of its
// entries: the entry's key (field 1) names it, its value is field 2.
type protobufPath struct {
	names   []string
	numbers []uint64
}

// protobufPaths are the quantity places, under KeyValueStore.spec (2),
// with the size named as version spells it.
func protobufPaths(version string) []protobufPath {
	paths := []protobufPath{{sizePathIn(version), []uint64{2, 4, 1}}}
	for _, container := range []struct {
		names   []string
		numbers []uint64 // down to the container's resources
	}{
		{[]string{"spec"}, []uint64{2, 11}},
		{[]string{"spec", "proxy"}, []uint64{2, 5, 3}},
		{[]string{"spec", "backup"}, []uint64{2, 6, 7}},
		{[]string{"spec", "bootstrap"}, []uint64{2, 9, 5}},
	} {
		for i, list := range []string{"requests", "limits"} {
			paths = append(paths, protobufPath{
				names:   append(slices.Clone(container.names), "resources", list, "*"),
				numbers: append(slices.Clone(container.numbers), uint64(i+1), 2),
			})
		}
	}
	return paths
}

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte("k8s\x00")

// checkProtobuf checks every quantity of a protobuf KeyValueStore, also
// those a repeated field would merge, naming them as version spells them.
func checkProtobuf(body []byte, version string) *field.Error {
	var err *field.Error
	eachProtobufQuantity(body, version, func(q string, at *field.Path) bool {
		err = checkQuantity(q, at)
		return err == nil
	})
	return err
}

// eachProtobufQuantity calls f with every quantity a protobuf KeyValueStore
// body holds and its place, until f returns false.
func eachProtobufQuantity(body []byte, version string, f func(string, *field.Path) bool) {
	raw, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return
	}
	eachLengthDelimited(raw, 2, func(obj []byte) bool { // runtime.Unknown.raw
		for _, p := range protobufPaths(version) {
			if !walkProtobuf(obj, p, nil, f) {
				return false
			}
		}
		return true
	})
}

// walkProtobuf follows p from msg, which keys (matched along p) lead to,
// and calls f with each quantity it reaches; false once f returned false.
func walkProtobuf(msg []byte, p protobufPath, keys []string, f func(string, *field.Path) bool) bool {
	more := true
	i := len(keys)
	switch {
	case i == len(p.names):
		// A resource.Quantity: its one field is the string parsed.
		eachLengthDelimited(msg, 1, func(v []byte) bool {
			more = f(string(v), fieldPathTo(p.names, keys))
			return more
		})
	case p.names[i] == "*":
		var key []byte
		eachLengthDelimited(msg, 1, func(v []byte) bool { key = v; return true }) // the last wins
		next := append(slices.Clone(keys), string(key))
		eachLengthDelimited(msg, 2, func(v []byte) bool {
			more = walkProtobuf(v, p, next, f)
			return more
		})
	default:
		next := append(slices.Clone(keys), p.names[i])
		eachLengthDelimited(msg, p.numbers[i], func(v []byte) bool {
			more = walkProtobuf(v, p, next, f)
			return more
		})
	}
	return more
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
