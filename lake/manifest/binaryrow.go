package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/flightd/flightd/lake/paimontype"
)

// BinaryRow is Java Paimon's row layout for keys, partitions and statistics (BinaryRow, with
// SerializationUtils.serializeBinaryRow in manifests). Values are Go values of the Paimon type:
// nil, bool, int8, int16, int32 (INT, DATE days, TIME millis), int64, float32, float64, string,
// []byte, Decimal, Timestamp. Only atomic types are encoded.

// Decimal is a DECIMAL value: Unscaled * 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

// Timestamp is a TIMESTAMP or TIMESTAMP_LTZ value: milliseconds since the epoch and the
// nanoseconds within the millisecond, as Java's Timestamp.
type Timestamp struct {
	Millis      int64
	NanoOfMilli int32
}

// ---- BinaryRow writer ----

func nullBitsWidth(arity int) int { return ((arity + 63 + 8) / 64) * 8 }

// EncodeBinaryRow writes the values as a Java BinaryRow (RowKind byte 0) and returns its bytes.
func EncodeBinaryRow(types []paimontype.DataType, vals []any) []byte {
	arity := len(types)
	nb := nullBitsWidth(arity)
	fixed := nb + 8*arity
	buf := make([]byte, fixed, fixed+16)
	setNull := func(i int) {
		idx := i + 8
		buf[idx>>3] |= 1 << (idx & 7)
	}
	slot := func(i int) []byte { return buf[nb+8*i : nb+8*i+8] }
	appendVar := func(data []byte, reserve int) int {
		off := len(buf)
		n := reserve
		if len(data) > n {
			n = len(data)
		}
		n = (n + 7) &^ 7
		buf = append(buf, make([]byte, n)...)
		copy(buf[off:], data)
		return off
	}
	for i, t := range types {
		v := vals[i]
		// Non-compact decimals and timestamps reserve their variable part even when null.
		if t.Root == paimontype.TypeDecimal && t.Precision > 18 {
			if v == nil {
				off := appendVar(nil, 16)
				setNull(i)
				binary.LittleEndian.PutUint64(slot(i), uint64(off)<<32)
				continue
			}
			b := bigIntToJavaBytes(v.(Decimal).Unscaled)
			off := appendVar(b, 16)
			binary.LittleEndian.PutUint64(slot(i), uint64(off)<<32|uint64(len(b)))
			continue
		}
		if (t.Root == paimontype.TypeTimestamp || t.Root == paimontype.TypeTimestampLTZ) && t.Precision > 3 {
			if v == nil {
				off := appendVar(nil, 8)
				setNull(i)
				binary.LittleEndian.PutUint64(slot(i), uint64(off)<<32)
				continue
			}
			ts := v.(Timestamp)
			var m [8]byte
			binary.LittleEndian.PutUint64(m[:], uint64(ts.Millis))
			off := appendVar(m[:], 8)
			binary.LittleEndian.PutUint64(slot(i), uint64(off)<<32|uint64(uint32(ts.NanoOfMilli)))
			continue
		}
		if v == nil {
			setNull(i)
			continue
		}
		s := slot(i)
		switch x := v.(type) {
		case bool:
			if x {
				s[0] = 1
			}
		case int8:
			s[0] = byte(x)
		case int16:
			binary.LittleEndian.PutUint16(s, uint16(x))
		case int32:
			binary.LittleEndian.PutUint32(s, uint32(x))
		case int64:
			binary.LittleEndian.PutUint64(s, uint64(x))
		case float32:
			binary.LittleEndian.PutUint32(s, math.Float32bits(x))
		case float64:
			binary.LittleEndian.PutUint64(s, math.Float64bits(x))
		case Decimal:
			binary.LittleEndian.PutUint64(s, uint64(x.Unscaled.Int64()))
		case Timestamp:
			binary.LittleEndian.PutUint64(s, uint64(x.Millis))
		case string, []byte:
			var b []byte
			if str, ok := x.(string); ok {
				b = []byte(str)
			} else {
				b = x.([]byte)
			}
			if len(b) <= 7 {
				copy(s, b)
				s[7] = 0x80 | byte(len(b))
			} else {
				off := appendVar(b, 0)
				binary.LittleEndian.PutUint64(slot(i), uint64(off)<<32|uint64(len(b)))
			}
		default:
			panic(fmt.Sprintf("manifest: binary row value %T", v))
		}
	}
	return buf
}

// bigIntToJavaBytes is BigInteger.toByteArray: minimal big-endian two's complement.
func bigIntToJavaBytes(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// two's complement of a negative number: 2^(8n) + v for the minimal n
	n := (v.BitLen() + 8) / 8
	m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	m.Add(m, v)
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	// minimal: drop redundant leading 0xff
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

func javaBytesToBigInt(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// DecodeBinaryRow reads a BinaryRow of atomic types back into internal values.
func DecodeBinaryRow(types []paimontype.DataType, buf []byte) ([]any, error) {
	arity := len(types)
	nb := nullBitsWidth(arity)
	if len(buf) < nb+8*arity {
		return nil, fmt.Errorf("%w: binary row of %d bytes too short for arity %d", ErrCorrupt, len(buf), arity)
	}
	out := make([]any, arity)
	for i, t := range types {
		idx := i + 8
		if buf[idx>>3]&(1<<(idx&7)) != 0 {
			continue
		}
		s := buf[nb+8*i : nb+8*i+8]
		u := binary.LittleEndian.Uint64(s)
		varPart := func() ([]byte, error) {
			off, n := int(u>>32), int(uint32(u))
			if off+n > len(buf) || off < 0 {
				return nil, fmt.Errorf("%w: binary row var part out of range", ErrCorrupt)
			}
			return buf[off : off+n], nil
		}
		switch t.Root {
		case paimontype.TypeBoolean:
			out[i] = s[0] != 0
		case paimontype.TypeTinyInt:
			out[i] = int8(s[0])
		case paimontype.TypeSmallInt:
			out[i] = int16(binary.LittleEndian.Uint16(s))
		case paimontype.TypeInt, paimontype.TypeDate, paimontype.TypeTime:
			out[i] = int32(binary.LittleEndian.Uint32(s))
		case paimontype.TypeBigInt:
			out[i] = int64(u)
		case paimontype.TypeFloat:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(s))
		case paimontype.TypeDouble:
			out[i] = math.Float64frombits(u)
		case paimontype.TypeDecimal:
			if t.Precision <= 18 {
				out[i] = Decimal{Unscaled: big.NewInt(int64(u)), Scale: t.Scale}
			} else {
				b, err := varPart()
				if err != nil {
					return nil, err
				}
				out[i] = Decimal{Unscaled: javaBytesToBigInt(b), Scale: t.Scale}
			}
		case paimontype.TypeTimestamp, paimontype.TypeTimestampLTZ:
			if t.Precision <= 3 {
				out[i] = Timestamp{Millis: int64(u)}
			} else {
				off := int(u >> 32)
				if off+8 > len(buf) {
					return nil, fmt.Errorf("%w: binary row timestamp out of range", ErrCorrupt)
				}
				out[i] = Timestamp{Millis: int64(binary.LittleEndian.Uint64(buf[off:])), NanoOfMilli: int32(uint32(u))}
			}
		case paimontype.TypeChar, paimontype.TypeVarChar, paimontype.TypeBinary, paimontype.TypeVarBinary:
			var b []byte
			if s[7]&0x80 != 0 {
				b = s[:s[7]&0x7f]
			} else {
				var err error
				if b, err = varPart(); err != nil {
					return nil, err
				}
			}
			if t.Root == paimontype.TypeChar || t.Root == paimontype.TypeVarChar {
				out[i] = string(b)
			} else {
				out[i] = bytes.Clone(b)
			}
		default:
			out[i] = nil
		}
	}
	return out, nil
}

// SerializeBinaryRow is SerializationUtils.SerializeBinaryRow: int32 BE arity then the row bytes.
func SerializeBinaryRow(arity int, row []byte) []byte {
	out := make([]byte, 4+len(row))
	binary.BigEndian.PutUint32(out, uint32(arity))
	copy(out[4:], row)
	return out
}

// DeserializeBinaryRow splits a serialized BinaryRow into its arity and row bytes. An error
// matches ErrCorrupt.
func DeserializeBinaryRow(b []byte) (int, []byte, error) {
	if len(b) < 4 {
		return 0, nil, fmt.Errorf("%w: serialized binary row of %d bytes", ErrCorrupt, len(b))
	}
	return int(binary.BigEndian.Uint32(b)), b[4:], nil
}

// ---- hashing ----

// HashBinaryRow is BinaryRow.hashCode: Murmur3_32 over the row's words, seed 42.
func HashBinaryRow(row []byte) int32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := uint32(42)
	for i := 0; i+4 <= len(row); i += 4 {
		k := binary.LittleEndian.Uint32(row[i:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	h ^= uint32(len(row))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32(h)
}

// BucketOf is DefaultBucketFunction: abs(hash % n) with Java's remainder semantics.
func BucketOf(hash int32, n int) int32 {
	r := hash % int32(n)
	if r < 0 {
		r = -r
	}
	return r
}
