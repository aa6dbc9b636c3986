package sim

import (
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Date expressions: parts of a date, formatting and parsing, date arithmetic.

func init() {
	for op, part := range map[string]func(time.Time) int{
		"$year": time.Time.Year, "$month": func(t time.Time) int { return int(t.Month()) }, "$dayOfMonth": time.Time.Day,
		"$hour": time.Time.Hour, "$minute": time.Time.Minute, "$second": time.Time.Second,
		"$millisecond": func(t time.Time) int { return t.Nanosecond() / 1e6 },
		"$dayOfYear":   time.Time.YearDay, "$dayOfWeek": func(t time.Time) int { return int(t.Weekday()) + 1 },
		"$isoDayOfWeek": func(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 },
		"$isoWeek":      func(t time.Time) int { _, w := t.ISOWeek(); return w },
		"$isoWeekYear":  func(t time.Time) int { y, _ := t.ISOWeek(); return y },
		"$week":         func(t time.Time) int { return (t.YearDay() + 6 - int(t.Weekday())) / 7 },
	} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			t, isNull, err := dateArg(x, op, arg)
			if err != nil || isNull {
				return nullValue, err
			}
			return val(int32(part(t))), nil
		}
	}
	exprOps["$dateToString"] = opDateToString
}

// dateArg evaluates a date operator's argument: a date, or {date, timezone}.
func dateArg(x *evalCtx, op string, arg bson.RawValue) (time.Time, bool, error) {
	dateE, tzE := arg, missing
	if d, ok := arg.DocumentOK(); ok {
		if e, err := d.IndexErr(0); err == nil && !strings.HasPrefix(e.Key(), "$") {
			m, err := namedArgs(op, arg, 40535, []string{"date", "timezone"}, "date")
			if err != nil {
				return time.Time{}, false, err
			}
			dateE, tzE = m["date"], m["timezone"]
		}
	} else if el, ok := arrayElems(arg); ok {
		if len(el) != 1 {
			return time.Time{}, false, cerr(40536, "%s accepts exactly one argument if given an array, but was given %d", op, len(el))
		}
		dateE = el[0]
	}
	dv, err := x.eval(dateE)
	if err != nil {
		return time.Time{}, false, err
	}
	loc, isNull, err := timezone(x, tzE)
	if err != nil || isNull || nullish(dv) {
		return time.Time{}, true, err
	}
	t, err := asTime(dv)
	return t.In(loc), false, err
}

func asTime(v bson.RawValue) (time.Time, error) {
	switch v.Type {
	case bson.TypeDateTime:
		return time.UnixMilli(v.DateTime()).UTC(), nil
	case bson.TypeTimestamp:
		t, _ := v.Timestamp()
		return time.Unix(int64(t), 0).UTC(), nil
	case bson.TypeObjectID:
		return v.ObjectID().Timestamp().UTC(), nil
	}
	return time.Time{}, cerr(16006, "can't convert from BSON type %s to Date", exprTypeName(v))
}

func timezone(x *evalCtx, tzE bson.RawValue) (*time.Location, bool, error) {
	if tzE.Type == 0 {
		return time.UTC, false, nil
	}
	tz, err := x.eval(tzE)
	if err != nil || nullish(tz) {
		return nil, true, err
	}
	s, ok := tz.StringValueOK()
	if !ok {
		return nil, false, cerr(40517, "timezone must evaluate to a string, found %s", exprTypeName(tz))
	}
	if len(s) >= 3 && (s[0] == '+' || s[0] == '-') {
		h, m := s[1:], "00"
		if len(h) > 2 {
			h, m = strings.TrimPrefix(h[:2], ":"), strings.TrimPrefix(h[2:], ":")
		}
		hh, e1 := strconv.Atoi(h)
		mm, e2 := strconv.Atoi(m)
		if e1 == nil && e2 == nil {
			off := hh*3600 + mm*60
			if s[0] == '-' {
				off = -off
			}
			return time.FixedZone(s, off), false, nil
		}
	}
	loc, lerr := time.LoadLocation(s)
	if lerr != nil || s == "" || s == "Local" {
		return nil, false, cerr(40485, "unrecognized time zone identifier: \"%s\"", s)
	}
	return loc, false, nil
}

func opDateToString(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(18629, "$dateToString only supports an object as its argument")
	}
	m, err := namedArgs("$dateToString", arg, 18534, []string{"date", "format", "timezone", "onNull"}, "date")
	if err != nil {
		return missing, err
	}
	format := "%Y-%m-%dT%H:%M:%S.%LZ"
	if f, ok := m["format"]; ok {
		fv, err := x.eval(f)
		if err != nil || nullish(fv) {
			return nullValue, err
		}
		s, ok := fv.StringValueOK()
		if !ok {
			return missing, cerr(18533, "$dateToString requires that 'format' be a string, found: %s with value %s", exprTypeName(fv), fv.String())
		}
		format = s
	}
	loc, isNull, err := timezone(x, m["timezone"])
	if err != nil || isNull {
		return nullValue, err
	}
	if _, ok := m["format"]; !ok && loc != time.UTC {
		format = "%Y-%m-%dT%H:%M:%S.%L"
	}
	dv, err := x.eval(m["date"])
	if err != nil {
		return missing, err
	}
	if nullish(dv) {
		if on, ok := m["onNull"]; ok {
			return x.eval(on)
		}
		return nullValue, nil
	}
	t, err := asTime(dv)
	if err != nil {
		return missing, err
	}
	t = t.In(loc)
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 >= len(format) {
			return missing, cerr(18535, "Unmatched '%%' at end of format string")
		}
		i++
		_, off := t.Zone()
		yw, wk := t.ISOWeek()
		switch format[i] {
		case 'Y':
			b.WriteString(pad(t.Year(), 4))
		case 'm':
			b.WriteString(pad(int(t.Month()), 2))
		case 'd':
			b.WriteString(pad(t.Day(), 2))
		case 'H':
			b.WriteString(pad(t.Hour(), 2))
		case 'M':
			b.WriteString(pad(t.Minute(), 2))
		case 'S':
			b.WriteString(pad(t.Second(), 2))
		case 'L':
			b.WriteString(pad(t.Nanosecond()/1e6, 3))
		case 'j':
			b.WriteString(pad(t.YearDay(), 3))
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday()) + 1))
		case 'u':
			b.WriteString(strconv.Itoa((int(t.Weekday())+6)%7 + 1))
		case 'U':
			b.WriteString(pad((t.YearDay()+6-int(t.Weekday()))/7, 2))
		case 'G':
			b.WriteString(pad(yw, 4))
		case 'V':
			b.WriteString(pad(wk, 2))
		case 'z':
			sign := "+"
			if off < 0 {
				sign, off = "-", -off
			}
			b.WriteString(sign + pad(off/3600, 2) + pad(off%3600/60, 2))
		case 'Z':
			b.WriteString(strconv.Itoa(off / 60))
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case '%':
			b.WriteByte('%')
		default:
			return missing, cerr(18536, "Invalid format character '%%%c' in format string", format[i])
		}
	}
	return val(b.String()), nil
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}
