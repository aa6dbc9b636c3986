package sim

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// bitsPred: $bitsAllSet, $bitsAnySet, $bitsAllClear, $bitsAnyClear with a
// bitmask number, an array of bit positions or BinData; they test integral
// numbers (two's complement) and BinData (bytes little-endian).
func bitsPred(op string, ov bson.RawValue) (func(bson.RawValue) bool, error) {
	var positions []uint
	switch {
	case isNumber(ov.Type):
		f := numberFloat(ov)
		if f != math.Trunc(f) || f > math.MaxInt64 || f < math.MinInt64 {
			return nil, cerr(9, "Expected an integer: %s: %s", op, showValue(ov))
		}
		if f < 0 {
			return nil, cerr(9, "Expected a positive number in: %s: %s", op, showValue(ov))
		}
		mask := uint64(f)
		for i := uint(0); i < 64; i++ {
			if mask&(1<<i) != 0 {
				positions = append(positions, i)
			}
		}
	case ov.Type == bson.TypeArray:
		vals, _ := ov.Array().Values()
		for _, v := range vals {
			if !isNumber(v.Type) {
				return nil, cerr(2, "bit positions must be an integer but got: %s", showValue(v))
			}
			f := numberFloat(v)
			if f != math.Trunc(f) {
				return nil, cerr(2, "bit positions must be an integer but got: %s", showValue(v))
			}
			if f < 0 {
				return nil, cerr(2, "bit positions cannot be negative but got: %s", showValue(v))
			}
			positions = append(positions, uint(f))
		}
	case ov.Type == bson.TypeBinary:
		_, data := ov.Binary()
		for i, b := range data {
			for j := uint(0); j < 8; j++ {
				if b&(1<<j) != 0 {
					positions = append(positions, uint(i)*8+j)
				}
			}
		}
	default:
		return nil, cerr(2, "%s takes an Array, a number, or a BinData but received: %s", op, showElem(op, ov))
	}
	wantSet := op == "$bitsAllSet" || op == "$bitsAnySet"
	all := op == "$bitsAllSet" || op == "$bitsAllClear"
	return func(v bson.RawValue) bool {
		bit, ok := bitsOf(v)
		if !ok {
			return false
		}
		for _, p := range positions {
			if bit(p) == wantSet {
				if !all {
					return true
				}
			} else if all {
				return false
			}
		}
		return all
	}, nil
}

// bitsOf gives a value's bit at each position: integral numbers as 64-bit
// two's complement (sign-extended beyond), BinData by byte.
func bitsOf(v bson.RawValue) (func(uint) bool, bool) {
	switch {
	case isNumber(v.Type):
		f := numberFloat(v)
		if f != math.Trunc(f) || f >= math.MaxInt64 || f < math.MinInt64 {
			return nil, false
		}
		n := int64(f)
		if isInteger(v.Type) {
			n, _ = v.AsInt64OK()
		}
		return func(p uint) bool {
			if p >= 64 {
				return n < 0
			}
			return uint64(n)&(1<<p) != 0
		}, true
	case v.Type == bson.TypeBinary:
		_, data := v.Binary()
		return func(p uint) bool {
			if int(p/8) >= len(data) {
				return false
			}
			return data[p/8]&(1<<(p%8)) != 0
		}, true
	}
	return nil, false
}
