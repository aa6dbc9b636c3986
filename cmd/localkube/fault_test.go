package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		args []string
		want faultArgs
	}{
		{[]string{"kill", "web-0", "--dir", "/d"},
			faultArgs{verb: "kill", dir: "/d", namespace: "default", targets: []string{"web-0"}}},
		{[]string{"kill", "-n", "db", "rs-0", "mongod", "--dir=/d"},
			faultArgs{verb: "kill", dir: "/d", namespace: "db", targets: []string{"rs-0", "mongod"}}},
		{[]string{"partition", "rs-0", "--from", "rs-1", "rs-2", "--dir", "/d", "--namespace=db"},
			faultArgs{verb: "partition", dir: "/d", namespace: "db", tag: defaultTag, targets: []string{"rs-0"}, from: []string{"rs-1", "rs-2"}}},
		{[]string{"partition", "--dir", "/d", "a", "b", "--tag", "t1", "--from=c"},
			faultArgs{verb: "partition", dir: "/d", namespace: "default", tag: "t1", targets: []string{"a", "b"}, from: []string{"c"}}},
		{[]string{"heal", "--dir", "/d"},
			faultArgs{verb: "heal", dir: "/d", namespace: "default"}},
		{[]string{"node-down", "localkube-2", "--dir", "/d"},
			faultArgs{verb: "node-down", dir: "/d", namespace: "default", targets: []string{"localkube-2"}}},
		{[]string{"restart-control-plane", "--dir", "/d"},
			faultArgs{verb: "restart-control-plane", dir: "/d", namespace: "default"}},
	}
	for _, tt := range tests {
		got, err := parseFault(tt.args)
		if err != nil {
			t.Errorf("parseFault(%q): %v", tt.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseFault(%q) = %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

func TestParseFaultRefuses(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{nil, "which fault"},
		{[]string{"explode", "--dir", "/d"}, `unknown fault "explode"`},
		{[]string{"kill", "web-0"}, "--dir is required"},
		{[]string{"kill", "--dir", "/d"}, "wrong arguments"},
		{[]string{"kill", "a", "b", "c", "--dir", "/d"}, "wrong arguments"},
		{[]string{"pause", "a", "--dir"}, "--dir needs a value"},
		{[]string{"partition", "a", "--dir", "/d"}, "--from"},
		{[]string{"heal", "a", "--dir", "/d"}, "wrong arguments"},
		{[]string{"kill", "a", "--from", "b", "--dir", "/d"}, "--from belongs to partition"},
		{[]string{"kill", "a", "--force", "--dir", "/d"}, "unknown flag --force"},
	} {
		_, err := parseFault(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("parseFault(%q) = %v, want an error saying %q", tt.args, err, tt.says)
		}
	}
}
