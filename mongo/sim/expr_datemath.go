package sim

import (
	"math"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Date arithmetic and construction: $dateAdd, $dateSubtract, $dateDiff,
// $dateTrunc, $dateFromParts, $dateToParts, $dateFromString.

var timeUnits = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true,
	"hour": true, "minute": true, "second": true, "millisecond": true}

func init() {
	exprOps["$dateAdd"] = dateAddOp("$dateAdd", 1)
	exprOps["$dateSubtract"] = dateAddOp("$dateSubtract", -1)
	exprOps["$dateDiff"] = opDateDiff
	exprOps["$dateFromParts"] = opDateFromParts
	exprOps["$dateToParts"] = opDateToParts
	exprOps["$dateFromString"] = opDateFromString
	exprOps["$dateTrunc"] = opDateTrunc
}

// evalNamed evaluates each named argument that is present.
func evalNamed(x *evalCtx, m map[string]bson.RawValue) (map[string]bson.RawValue, error) {
	out := map[string]bson.RawValue{}
	for k, e := range m {
		v, err := x.eval(e)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func timeUnit(op string, v bson.RawValue) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", cerr(5439013, "%s requires 'unit' to be a string, but got %s", op, exprTypeName(v))
	}
	if !timeUnits[s] {
		return "", cerr(5439014, "%s parameter 'unit' value cannot be recognized as a time unit: %s", op, s)
	}
	return s, nil
}

// addUnits adds n units to t; months and years keep the day within the month, as mongod does.
func addUnits(t time.Time, unit string, n int64) time.Time {
	switch unit {
	case "year", "quarter", "month":
		months := n * map[string]int64{"year": 12, "quarter": 3, "month": 1}[unit]
		first := time.Date(t.Year(), t.Month(), 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location()).AddDate(0, int(months), 0)
		last := first.AddDate(0, 1, -1).Day()
		return first.AddDate(0, 0, min(t.Day(), last)-1)
	case "week":
		return t.AddDate(0, 0, int(7*n))
	case "day":
		return t.AddDate(0, 0, int(n))
	}
	d := map[string]time.Duration{"hour": time.Hour, "minute": time.Minute, "second": time.Second, "millisecond": time.Millisecond}[unit]
	return t.Add(time.Duration(n) * d)
}

func dateAddOp(op string, sign int64) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		if _, ok := arg.DocumentOK(); !ok {
			return missing, cerr(5166400, "%s expects an object as its argument", op)
		}
		m, err := namedArgs(op, arg, 5166401, []string{"startDate", "unit", "amount", "timezone"}, "startDate", "unit", "amount")
		if err != nil {
			return missing, err
		}
		loc, isNull, err := timezone(x, m["timezone"])
		if err != nil || isNull {
			return nullValue, err
		}
		delete(m, "timezone")
		v, err := evalNamed(x, m)
		if err != nil {
			return missing, err
		}
		if nullish(v["startDate"]) || nullish(v["unit"]) || nullish(v["amount"]) {
			return nullValue, nil
		}
		start, err := asTime(v["startDate"])
		if err != nil {
			return missing, cerr(5166403, "%s requires startDate to be convertible to a date", op)
		}
		unit, err := timeUnit(op, v["unit"])
		if err != nil {
			return missing, err
		}
		amt := v["amount"]
		n, ok := intArg(amt)
		if !isArith(amt) || !ok || amt.Type == bson.TypeDouble && amt.Double() != float64(n) {
			return missing, cerr(5166405, "%s expects integer amount of time units", op)
		}
		return val(bson.NewDateTimeFromTime(addUnits(start.In(loc), unit, sign*n))), nil
	}
}

func opDateDiff(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(5166301, "$dateDiff only supports an object as its argument")
	}
	m, err := namedArgs("$dateDiff", arg, 5166302, []string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}, "startDate", "endDate", "unit")
	if err != nil {
		return missing, err
	}
	loc, isNull, err := timezone(x, m["timezone"])
	if err != nil || isNull {
		return nullValue, err
	}
	delete(m, "timezone")
	v, err := evalNamed(x, m)
	if err != nil {
		return missing, err
	}
	for _, k := range []string{"startDate", "endDate", "unit"} {
		if nullish(v[k]) {
			return nullValue, nil
		}
	}
	start, err := asTime(v["startDate"])
	if err != nil {
		return missing, cerr(5166307, "$dateDiff requires 'startDate' to be a date, but got %s", exprTypeName(v["startDate"]))
	}
	end, err := asTime(v["endDate"])
	if err != nil {
		return missing, cerr(5166307, "$dateDiff requires 'endDate' to be a date, but got %s", exprTypeName(v["endDate"]))
	}
	unit, err := timeUnit("$dateDiff", v["unit"])
	if err != nil {
		return missing, err
	}
	start, end = start.In(loc), end.In(loc)
	weekStart := time.Sunday
	if sw, ok := v["startOfWeek"]; ok && unit == "week" && !nullish(sw) {
		s, _ := sw.StringValueOK()
		found := false
		for d := time.Sunday; d <= time.Saturday; d++ {
			if strings.EqualFold(s, d.String()) || strings.EqualFold(s, d.String()[:3]) {
				weekStart, found = d, true
			}
		}
		if !found {
			return missing, cerr(5439016, "$dateDiff parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", s)
		}
	}
	day := func(t time.Time) int64 {
		y, mo, d := t.Date()
		return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
	}
	var n int64
	switch unit {
	case "year":
		n = int64(end.Year() - start.Year())
	case "quarter":
		n = int64(end.Year()*4+(int(end.Month())-1)/3) - int64(start.Year()*4+(int(start.Month())-1)/3)
	case "month":
		n = int64(end.Year()*12+int(end.Month())) - int64(start.Year()*12+int(start.Month()))
	case "week":
		// weeks start on weekStart; day 0 of the Unix epoch was a Thursday
		shift := (int64(weekStart) - int64(time.Thursday) + 7) % 7
		n = floorDiv(day(end)-shift, 7) - floorDiv(day(start)-shift, 7)
	case "day":
		n = day(end) - day(start)
	default:
		unitMs := map[string]int64{"hour": 3600000, "minute": 60000, "second": 1000, "millisecond": 1}[unit]
		_, offS := start.Zone()
		_, offE := end.Zone()
		n = floorDiv(end.UnixMilli()+int64(offE)*1000, unitMs) - floorDiv(start.UnixMilli()+int64(offS)*1000, unitMs)
	}
	return val(n), nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func opDateFromParts(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(40519, "$dateFromParts only supports an object as its argument")
	}
	names := []string{"year", "month", "day", "hour", "minute", "second", "millisecond", "isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone"}
	m, err := namedArgs("$dateFromParts", arg, 40518, names)
	if err != nil {
		return missing, err
	}
	_, hasYear := m["year"]
	_, hasISO := m["isoWeekYear"]
	switch {
	case !hasYear && !hasISO:
		return missing, cerr(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	case hasYear && hasISO:
		return missing, cerr(40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
	}
	loc, isNull, err := timezone(x, m["timezone"])
	if err != nil || isNull {
		return nullValue, err
	}
	delete(m, "timezone")
	v, err := evalNamed(x, m)
	if err != nil {
		return missing, err
	}
	part := map[string]int{"month": 1, "day": 1, "isoWeek": 1, "isoDayOfWeek": 1}
	for _, k := range names[:10] {
		w, ok := v[k]
		if !ok {
			continue
		}
		if nullish(w) {
			return nullValue, nil
		}
		n, isInt := intArg(w)
		if !isArith(w) || !isInt || w.Type == bson.TypeDouble && w.Double() != float64(n) {
			return missing, cerr(40515, "'%s' must evaluate to an integer, found %s with value %s", k, exprTypeName(w), w.String())
		}
		part[k] = int(n)
	}
	ns := part["millisecond"] * int(time.Millisecond)
	if hasISO {
		jan4 := time.Date(part["isoWeekYear"], 1, 4, part["hour"], part["minute"], part["second"], ns, loc)
		monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
		return val(bson.NewDateTimeFromTime(monday.AddDate(0, 0, (part["isoWeek"]-1)*7+part["isoDayOfWeek"]-1))), nil
	}
	if y := part["year"]; y < 1 || y > 9999 {
		return missing, cerr(40523, "'year' must evaluate to an integer in the range 1 to 9999, found %d", y)
	}
	t := time.Date(part["year"], time.Month(part["month"]), part["day"], part["hour"], part["minute"], part["second"], ns, loc)
	return val(bson.NewDateTimeFromTime(t)), nil
}

func opDateToParts(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(40524, "$dateToParts only supports an object as its argument")
	}
	m, err := namedArgs("$dateToParts", arg, 40520, []string{"date", "timezone", "iso8601"}, "date")
	if err != nil {
		return missing, err
	}
	t, isNull, err := dateArg(x, "$dateToParts", val(bson.D{{Key: "date", Value: m["date"]}, {Key: "timezone", Value: tzOrNull(m)}}))
	if err != nil || isNull {
		return nullValue, err
	}
	iso := false
	if ie, ok := m["iso8601"]; ok {
		iv, err := x.eval(ie)
		if err != nil {
			return missing, err
		}
		if iso, ok = iv.BooleanOK(); !ok && !nullish(iv) {
			return missing, cerr(40521, "iso8601 must evaluate to a bool, found %s", exprTypeName(iv))
		}
	}
	var d bson.D
	if iso {
		y, w := t.ISOWeek()
		d = bson.D{{Key: "isoWeekYear", Value: int32(y)}, {Key: "isoWeek", Value: int32(w)}, {Key: "isoDayOfWeek", Value: int32((int(t.Weekday())+6)%7 + 1)}}
	} else {
		d = bson.D{{Key: "year", Value: int32(t.Year())}, {Key: "month", Value: int32(t.Month())}, {Key: "day", Value: int32(t.Day())}}
	}
	d = append(d, bson.E{Key: "hour", Value: int32(t.Hour())}, bson.E{Key: "minute", Value: int32(t.Minute())},
		bson.E{Key: "second", Value: int32(t.Second())}, bson.E{Key: "millisecond", Value: int32(t.Nanosecond() / 1e6)})
	return val(d), nil
}

func tzOrNull(m map[string]bson.RawValue) bson.RawValue {
	if tz, ok := m["timezone"]; ok {
		return tz
	}
	return val("UTC")
}

// strftimeLayout turns mongod's format specifiers into a Go time layout.
func strftimeLayout(format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 >= len(format) {
			return "", cerr(18535, "Unmatched '%%' at end of format string")
		}
		i++
		l, ok := map[byte]string{'Y': "2006", 'm': "01", 'd': "02", 'H': "15", 'M': "04", 'S': "05", 'L': "000",
			'z': "-0700", 'Z': "-0700", 'j': "002", 'b': "Jan", 'B': "January", '%': "%"}[format[i]]
		if !ok {
			return "", cerr(18536, "Invalid format character '%%%c' in format string", format[i])
		}
		b.WriteString(l)
	}
	return b.String(), nil
}

func opDateFromString(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(40540, "$dateFromString only supports an object as an argument, found: %s", exprTypeName(arg))
	}
	m, err := namedArgs("$dateFromString", arg, 40541, []string{"dateString", "format", "timezone", "onError", "onNull"}, "dateString")
	if err != nil {
		return missing, err
	}
	fail := func(e error) (bson.RawValue, error) {
		if on, ok := m["onError"]; ok {
			return x.eval(on)
		}
		return missing, e
	}
	sv, err := x.eval(m["dateString"])
	if err != nil {
		return missing, err
	}
	loc, isNull, err := timezone(x, m["timezone"])
	if err != nil || isNull {
		return nullValue, err
	}
	if nullish(sv) {
		if on, ok := m["onNull"]; ok {
			return x.eval(on)
		}
		return nullValue, nil
	}
	s, ok := sv.StringValueOK()
	if !ok {
		return fail(cerr(241, "$dateFromString requires that 'dateString' be a string, found: %s with value %s", exprTypeName(sv), sv.String()))
	}
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05", "2006-01-02T15:04:05.000",
		"2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02", "2006/01/02", "2006/01/02 15:04:05"}
	if fe, ok := m["format"]; ok {
		fv, err := x.eval(fe)
		if err != nil {
			return missing, err
		}
		if nullish(fv) {
			return nullValue, nil
		}
		f, ok := fv.StringValueOK()
		if !ok {
			return missing, cerr(40684, "$dateFromString requires that 'format' be a string, found: %s with value %s", exprTypeName(fv), fv.String())
		}
		l, err := strftimeLayout(f)
		if err != nil {
			return missing, err
		}
		layouts = []string{l}
	}
	for _, l := range layouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return val(bson.NewDateTimeFromTime(t)), nil
		}
	}
	return fail(cerr(241, "an incomplete date/time string has been found, with elements missing: \"%s\"", s))
}

// opDateTrunc truncates to bins of binSize units counted from 2000-01-01, as mongod does.
func opDateTrunc(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(5439007, "$dateTrunc only supports an object as its argument")
	}
	m, err := namedArgs("$dateTrunc", arg, 5439008, []string{"date", "unit", "binSize", "timezone", "startOfWeek"}, "date", "unit")
	if err != nil {
		return missing, err
	}
	loc, isNull, err := timezone(x, m["timezone"])
	if err != nil || isNull {
		return nullValue, err
	}
	delete(m, "timezone")
	v, err := evalNamed(x, m)
	if err != nil {
		return missing, err
	}
	for _, k := range []string{"date", "unit", "binSize", "startOfWeek"} {
		if w, ok := v[k]; ok && nullish(w) {
			return nullValue, nil
		}
	}
	t, err := asTime(v["date"])
	if err != nil {
		return missing, cerr(5439012, "$dateTrunc requires 'date' to be a date, but got %s", exprTypeName(v["date"]))
	}
	unit, err := timeUnit("$dateTrunc", v["unit"])
	if err != nil {
		return missing, err
	}
	bin := int64(1)
	if b, ok := v["binSize"]; ok {
		n, isInt := intArg(b)
		if !isArith(b) || !isInt || b.Type == bson.TypeDouble && b.Double() != float64(n) || n <= 0 {
			return missing, cerr(5439017, "$dateTrunc requires 'binSize' to be a 64-bit integer greater than 0, but got value '%s' of type %s", b.String(), exprTypeName(b))
		}
		bin = n
	}
	weekStart := time.Sunday
	if sw, ok := v["startOfWeek"]; ok && unit == "week" {
		s, _ := sw.StringValueOK()
		found := false
		for d := time.Sunday; d <= time.Saturday; d++ {
			if strings.EqualFold(s, d.String()) || strings.EqualFold(s, d.String()[:3]) {
				weekStart, found = d, true
			}
		}
		if !found {
			return missing, cerr(5439016, "$dateTrunc parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", s)
		}
	}
	t = t.In(loc)
	ref := time.Date(2000, 1, 1, 0, 0, 0, 0, loc)
	var out time.Time
	switch unit {
	case "year", "quarter", "month":
		per := map[string]int64{"year": 12, "quarter": 3, "month": 1}[unit] * bin
		months := int64(t.Year()-2000)*12 + int64(t.Month()) - 1
		out = ref.AddDate(0, int(floorDiv(months, per)*per), 0)
	case "week", "day":
		if unit == "week" {
			for ref.Weekday() != weekStart {
				ref = ref.AddDate(0, 0, 1)
			}
			bin *= 7
		}
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		days := int64(math.Round(day.Sub(ref).Hours() / 24))
		out = ref.AddDate(0, 0, int(floorDiv(days, bin)*bin))
	default:
		d := map[string]int64{"hour": 3600000, "minute": 60000, "second": 1000, "millisecond": 1}[unit] * bin
		_, off := t.Zone()
		ms := t.UnixMilli() + int64(off)*1000
		refMs := ref.UnixMilli() + int64(off)*1000
		out = time.UnixMilli(floorDiv(ms-refMs, d)*d + refMs - int64(off)*1000)
	}
	return val(bson.NewDateTimeFromTime(out)), nil
}
