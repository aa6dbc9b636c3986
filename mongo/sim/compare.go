package sim

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// typeOrder is MongoDB's canonical BSON comparison order.
func typeOrder(t bson.Type) int {
	switch t {
	case bson.TypeMinKey:
		return 1
	case bson.TypeNull, bson.TypeUndefined, 0:
		return 2
	case bson.TypeDouble, bson.TypeInt32, bson.TypeInt64, bson.TypeDecimal128:
		return 3
	case bson.TypeString, bson.TypeSymbol:
		return 4
	case bson.TypeEmbeddedDocument:
		return 5
	case bson.TypeArray:
		return 6
	case bson.TypeBinary:
		return 7
	case bson.TypeObjectID:
		return 8
	case bson.TypeBoolean:
		return 9
	case bson.TypeDateTime:
		return 10
	case bson.TypeTimestamp:
		return 11
	case bson.TypeRegex:
		return 12
	case bson.TypeMaxKey:
		return 100
	}
	return 50
}

// compareValues orders two values as MongoDB does (numbers across types).
func compareValues(a, b bson.RawValue) int {
	oa, ob := typeOrder(a.Type), typeOrder(b.Type)
	if oa != ob {
		return cmpInt(oa, ob)
	}
	switch oa {
	case 2, 1, 100:
		return 0
	case 3:
		fa, fb := numberFloat(a), numberFloat(b)
		if na, nb := math.IsNaN(fa), math.IsNaN(fb); na || nb {
			// NaN orders below every other number and equals itself
			switch {
			case na && nb:
				return 0
			case na:
				return -1
			}
			return 1
		}
		switch {
		case isInteger(a.Type) && isInteger(b.Type):
			ia, _ := a.AsInt64OK()
			ib, _ := b.AsInt64OK()
			return cmpInt64(ia, ib)
		case isInteger(a.Type) && b.Type == bson.TypeDouble:
			ia, _ := a.AsInt64OK()
			return cmpIntDouble(ia, fb)
		case a.Type == bson.TypeDouble && isInteger(b.Type):
			ib, _ := b.AsInt64OK()
			return -cmpIntDouble(ib, fa)
		}
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	case 4:
		sa, _ := a.StringValueOK()
		sb, _ := b.StringValueOK()
		return strings.Compare(sa, sb)
	case 9:
		ba, bb := a.Boolean(), b.Boolean()
		if ba == bb {
			return 0
		}
		if !ba {
			return -1
		}
		return 1
	case 10:
		return cmpInt64(a.DateTime(), b.DateTime())
	case 11:
		ta, ia := a.Timestamp()
		tb, ib := b.Timestamp()
		if ta != tb {
			return cmpInt64(int64(ta), int64(tb))
		}
		return cmpInt64(int64(ia), int64(ib))
	case 5, 6:
		return compareDocs(a, b)
	}
	return bytes.Compare(a.Value, b.Value)
}

// numberFloat: any BSON number as a float64 (Decimal128 approximately).
func numberFloat(v bson.RawValue) float64 {
	if d, ok := v.Decimal128OK(); ok {
		f, err := strconv.ParseFloat(d.String(), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	f, _ := v.AsFloat64OK()
	return f
}

// compareDocs orders documents (and arrays) element by element: the
// values' type order, then the field names, then the values, as mongod.
func compareDocs(a, b bson.RawValue) int {
	ea, _ := bson.Raw(a.Value).Elements()
	eb, _ := bson.Raw(b.Value).Elements()
	for i := 0; i < len(ea) && i < len(eb); i++ {
		va, vb := ea[i].Value(), eb[i].Value()
		if c := cmpInt(typeOrder(va.Type), typeOrder(vb.Type)); c != 0 {
			return c
		}
		if a.Type == bson.TypeEmbeddedDocument {
			if c := strings.Compare(ea[i].Key(), eb[i].Key()); c != 0 {
				return c
			}
		}
		if c := compareValues(va, vb); c != 0 {
			return c
		}
	}
	return cmpInt(len(ea), len(eb))
}

// cmpIntDouble compares exactly, where converting the integer to a double
// would round (beyond 2^53).
func cmpIntDouble(i int64, d float64) int {
	switch {
	case d >= 0x1p63:
		return -1
	case d < -0x1p63:
		return 1
	}
	t := math.Trunc(d)
	if c := cmpInt64(i, int64(t)); c != 0 {
		return c
	}
	switch {
	case d > t:
		return -1
	case d < t:
		return 1
	}
	return 0
}

func isInteger(t bson.Type) bool { return t == bson.TypeInt32 || t == bson.TypeInt64 }

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
