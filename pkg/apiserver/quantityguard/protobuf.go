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
	for _, holder := range resourceHolders {
		for i, list := range resourceLists {
			paths = append(paths, protobufPath{
				names:   append(slices.Clone(holder.names), list, "*"),
				numbers: append(slices.Clone(holder.numbers), uint64(i+1), 2),
			})
		}
	}
	return paths
}

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte("k8s\x00")

// protoField is one field of a protobuf message as read.
type protoField struct {
	num, wireType uint64
	value         []byte // of a length-delimited field
}

// unreadableProtobuf refuses a protobuf body the guard cannot read as
// strictly as it must: the generated decoders accept more than a strict
// reading (a map entry's fields of any wire type, an entry's value running
// past the entry, a varint with bits beyond 64), and would parse a
// quantity the walk did not reach. client-go never writes such a body.
func unreadableProtobuf(at *field.Path) *field.Error {
	return field.TypeInvalid(at, nil,
		"a protobuf body that does not parse strictly is refused before it is decoded")
}

// checkProtobuf checks a protobuf body's kind and every quantity at
// patterns, also those a repeated field would merge, naming them as
// version spells them.
func checkProtobuf(body []byte, version, kind string, patterns [][]string) *field.Error {
	paths := protobufPaths(version)
	if patterns == nil {
		paths = nil
	}
	return eachProtobufQuantity(body, version, kind, paths, func(q string, at *field.Path) *field.Error {
		return checkQuantity(q, at)
	})
}

// eachProtobufQuantity calls f with every quantity at paths a protobuf body
// holds and its place, and returns the first error f returns, or why the
// body is refused before that: another kind than kind, or a layout the
// walk cannot read strictly. A body without the envelope is the decoder's
// to refuse.
func eachProtobufQuantity(body []byte, version, kind string, paths []protobufPath, f func(string, *field.Path) *field.Error) *field.Error {
	raw, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return nil
	}
	at := unreadableAt(version, paths != nil)
	unknown, ok := parseProtobuf(raw)
	if !ok {
		return unreadableProtobuf(at)
	}
	for _, fld := range unknown {
		if fld.num != 1 && fld.num != 2 {
			continue
		}
		if fld.wireType != 2 {
			return unreadableProtobuf(at)
		}
		if fld.num == 1 { // runtime.Unknown.typeMeta
			if err := checkProtobufKind(fld.value, at, kind); err != nil {
				return err
			}
			continue
		}
		for _, p := range paths { // runtime.Unknown.raw
			if err := walkProtobuf(fld.value, p, nil, at, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkProtobufKind refuses a TypeMeta naming another kind than want
// (its field 2).
func checkProtobufKind(typeMeta []byte, at *field.Path, want string) *field.Error {
	fields, ok := parseProtobuf(typeMeta)
	if !ok {
		return unreadableProtobuf(at)
	}
	for _, fld := range fields {
		if fld.num == 2 {
			if fld.wireType != 2 {
				return unreadableProtobuf(at)
			}
			if err := checkKind(string(fld.value), want); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkProtobuf follows p from msg, which keys (matched along p) lead to,
// and calls f with each quantity it reaches. Every message on the way is
// read whole, strictly, and its fields on p must be length-delimited.
func walkProtobuf(msg []byte, p protobufPath, keys []string, at *field.Path, f func(string, *field.Path) *field.Error) *field.Error {
	fields, ok := parseProtobuf(msg)
	if !ok {
		return unreadableProtobuf(at)
	}
	i := len(keys)
	// each calls visit with the value of every field num, in order.
	each := func(num uint64, visit func([]byte) *field.Error) *field.Error {
		for _, fld := range fields {
			if fld.num != num {
				continue
			}
			if fld.wireType != 2 {
				return unreadableProtobuf(at)
			}
			if err := visit(fld.value); err != nil {
				return err
			}
		}
		return nil
	}
	switch {
	case i == len(p.names):
		// A resource.Quantity: its one field is the string parsed.
		return each(1, func(v []byte) *field.Error { return f(string(v), fieldPathTo(p.names, keys)) })
	case p.names[i] == "*":
		// A map entry: its key names it (the last one given), its value is field 2.
		var key []byte
		if err := each(1, func(v []byte) *field.Error { key = v; return nil }); err != nil {
			return err
		}
		next := append(slices.Clone(keys), string(key))
		return each(2, func(v []byte) *field.Error { return walkProtobuf(v, p, next, at, f) })
	default:
		next := append(slices.Clone(keys), p.names[i])
		return each(p.numbers[i], func(v []byte) *field.Error { return walkProtobuf(v, p, next, at, f) })
	}
}

// maxProtobufField is the largest field number protobuf allows.
const maxProtobufField = 1<<29 - 1

// parseProtobuf reads every field of msg; false for anything a strict
// reading refuses: a varint over 64 bits, a length past the message's end,
// an unbalanced group, an unknown wire type, a field number of 0 or over
// maxProtobufField.
func parseProtobuf(msg []byte) ([]protoField, bool) {
	var out []protoField
	for len(msg) > 0 {
		tag, n := binary.Uvarint(msg)
		if n <= 0 || tag>>3 == 0 || tag>>3 > maxProtobufField {
			// The generated decoders read a field number as an int32: a
			// larger one would be another field to them than to the walk.
			return nil, false
		}
		msg = msg[n:]
		fld := protoField{num: tag >> 3, wireType: tag & 7}
		switch fld.wireType {
		case 0: // varint
			if _, n = binary.Uvarint(msg); n <= 0 {
				return nil, false
			}
		case 1: // fixed64
			n = 8
		case 5: // fixed32
			n = 4
		case 2: // length-delimited
			length, m := binary.Uvarint(msg)
			if m <= 0 || length > uint64(len(msg)-m) {
				return nil, false
			}
			fld.value = msg[m : m+int(length)]
			n = m + int(length)
		case 3: // a group, skipped as the generated decoders skip it
			if n = skipGroup(msg); n < 0 {
				return nil, false
			}
		default:
			return nil, false
		}
		if n > len(msg) {
			return nil, false
		}
		msg = msg[n:]
		out = append(out, fld)
	}
	return out, true
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
