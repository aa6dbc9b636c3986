package sim

import (
	"regexp"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// $regexMatch, $regexFind and $regexFindAll. Go's RE2 stands in for PCRE:
// no backreferences or lookaround.

func init() {
	exprOps["$regexMatch"] = regexOp("$regexMatch")
	exprOps["$regexFind"] = regexOp("$regexFind")
	exprOps["$regexFindAll"] = regexOp("$regexFindAll")
}

// regexArgs evaluates {input, regex, options}; re is nil when the regex is null.
func regexArgs(x *evalCtx, op string, arg bson.RawValue) (re *regexp.Regexp, in bson.RawValue, err error) {
	if _, ok := arg.DocumentOK(); !ok {
		return nil, missing, cerr(51103, "%s expects an object of named arguments but found: %s", op, exprTypeName(arg))
	}
	m, err := namedArgs(op, arg, 31024, []string{"input", "regex", "options"}, "input", "regex")
	if err != nil {
		return nil, missing, err
	}
	if in, err = x.eval(m["input"]); err != nil {
		return nil, missing, err
	}
	rv, err := x.eval(m["regex"])
	if err != nil {
		return nil, missing, err
	}
	var opts bson.RawValue
	if o, ok := m["options"]; ok {
		if opts, err = x.eval(o); err != nil {
			return nil, missing, err
		}
	}
	var pattern, flags string
	switch {
	case nullish(rv):
		return nil, in, nil
	case rv.Type == bson.TypeString:
		pattern = rv.StringValue()
	case rv.Type == bson.TypeRegex:
		pattern, flags = rv.Regex()
	default:
		return nil, missing, cerr(51105, "%s needs 'regex' to be of type string or regex", op)
	}
	if o, ok := opts.StringValueOK(); ok {
		if flags != "" && o != "" {
			return nil, missing, cerr(51107, "%s: regex option(s) specified in both 'regex' and 'option' fields", op)
		}
		flags += o
	} else if !nullish(opts) {
		return nil, missing, cerr(51106, "%s needs 'options' to be of type string", op)
	}
	if !nullish(in) && in.Type != bson.TypeString {
		return nil, missing, cerr(51104, "%s needs 'input' to be of type string", op)
	}
	prefix := ""
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			prefix += string(f)
		case 'x', 'u':
		default:
			return nil, missing, cerr(51108, "%s invalid flag in regex options: %c", op, f)
		}
	}
	if prefix != "" {
		pattern = "(?" + prefix + ")" + pattern
	}
	if re, err = regexp.Compile(pattern); err != nil {
		return nil, missing, cerr(51111, "Invalid Regex in %s: %v", op, err)
	}
	return re, in, nil
}

// regexOp answers whether the input matches, its first match, or all matches.
func regexOp(op string) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		re, in, err := regexArgs(x, op, arg)
		if err != nil {
			return missing, err
		}
		if re == nil || nullish(in) {
			switch op {
			case "$regexMatch":
				return val(false), nil
			case "$regexFind":
				return nullValue, nil
			}
			return arrayValue(nil), nil
		}
		s := in.StringValue()
		switch op {
		case "$regexMatch":
			return val(re.MatchString(s)), nil
		case "$regexFind":
			loc := re.FindStringSubmatchIndex(s)
			if loc == nil {
				return nullValue, nil
			}
			return regexMatchDoc(s, loc), nil
		}
		var out []bson.RawValue
		for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
			out = append(out, regexMatchDoc(s, loc))
		}
		return arrayValue(out), nil
	}
}

// regexMatchDoc is {match, idx (in code points), captures} of one match.
func regexMatchDoc(s string, loc []int) bson.RawValue {
	captures := bson.A{}
	for g := 2; g+1 < len(loc); g += 2 {
		if loc[g] < 0 {
			captures = append(captures, nil)
			continue
		}
		captures = append(captures, s[loc[g]:loc[g+1]])
	}
	return val(bson.D{{Key: "match", Value: s[loc[0]:loc[1]]}, {Key: "idx", Value: int32(utf8.RuneCountInString(s[:loc[0]]))},
		{Key: "captures", Value: captures}})
}
