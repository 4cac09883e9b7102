package quantityguard

import "encoding/binary"

// cborHasTag reports whether a CBOR body holds a tag numbered one of tags
// anywhere; ok is false for a body it cannot read as a sequence of
// well-formed items (the decoder refuses those too).
func cborHasTag(body []byte, tags ...uint64) (found, ok bool) {
	for len(body) > 0 {
		n, tagged, ok := cborItem(body, tags, 0)
		if !ok {
			return false, false
		}
		found = found || tagged
		body = body[n:]
	}
	return found, true
}

// maxCBORDepth bounds the nesting cborItem follows, as the decoder does.
const maxCBORDepth = 1000

// cborItem reads one data item from b: its length, and whether it holds
// one of tags.
func cborItem(b []byte, tags []uint64, depth int) (n int, tagged, ok bool) {
	if depth > maxCBORDepth || len(b) == 0 {
		return 0, false, false
	}
	major, info := b[0]>>5, b[0]&31
	arg, size, ok := cborArgument(b)
	if !ok {
		return 0, false, false
	}
	indefinite := info == 31
	switch major {
	case 0, 1: // integers
		return size, false, !indefinite
	case 2, 3: // byte and text strings
		if indefinite {
			return cborUntilBreak(b, size, tags, depth)
		}
		if arg > uint64(len(b)-size) {
			return 0, false, false
		}
		return size + int(arg), false, true
	case 4, 5: // arrays and maps
		if indefinite {
			return cborUntilBreak(b, size, tags, depth)
		}
		items := arg
		if major == 5 {
			items *= 2
		}
		pos := size
		for range items {
			m, t, ok := cborItem(b[pos:], tags, depth+1)
			if !ok {
				return 0, false, false
			}
			pos, tagged = pos+m, tagged || t
		}
		return pos, tagged, true
	case 6: // a tag, then its content
		if indefinite {
			return 0, false, false
		}
		m, t, ok := cborItem(b[size:], tags, depth+1)
		if !ok {
			return 0, false, false
		}
		for _, want := range tags {
			t = t || arg == want
		}
		return size + m, t, true
	default: // simple values and floats; a break outside a container is malformed
		return size, false, !indefinite
	}
}

// cborUntilBreak reads the items of an indefinite-length container from
// b[pos:] up to its break (0xff).
func cborUntilBreak(b []byte, pos int, tags []uint64, depth int) (n int, tagged, ok bool) {
	for {
		if pos >= len(b) {
			return 0, false, false
		}
		if b[pos] == 0xff {
			return pos + 1, tagged, true
		}
		m, t, ok := cborItem(b[pos:], tags, depth+1)
		if !ok {
			return 0, false, false
		}
		pos, tagged = pos+m, tagged || t
	}
}

// cborArgument is an item's argument and the length of its head.
func cborArgument(b []byte) (arg uint64, size int, ok bool) {
	info := b[0] & 31
	switch {
	case info < 24:
		return uint64(info), 1, true
	case info == 31:
		return 0, 1, true
	case info > 27:
		return 0, 0, false
	}
	width := 1 << (info - 24) // 1, 2, 4 or 8 bytes
	if len(b) < 1+width {
		return 0, 0, false
	}
	switch width {
	case 1:
		arg = uint64(b[1])
	case 2:
		arg = uint64(binary.BigEndian.Uint16(b[1:]))
	case 4:
		arg = uint64(binary.BigEndian.Uint32(b[1:]))
	default:
		arg = binary.BigEndian.Uint64(b[1:])
	}
	return arg, 1 + width, true
}
