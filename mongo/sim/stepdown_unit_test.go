package sim

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A newly elected primary that has not drained yet serves reads only to
// secondaryOk readers: checkCanRun's rule, checked without processes.
func TestDrainingPrimaryReadRule(t *testing.T) {
	n := &Node{state: StatePrimary, writable: false}
	read := &Request{Body: mustRaw(bson.D{{Key: "find", Value: "c"}})}
	if e := n.checkCanRun(classRead, read, false); e == nil || e.Code != 13435 {
		t.Fatalf("draining primary, no secondaryOk: want 13435, got %v", e)
	}
	secOK := &Request{Body: mustRaw(bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}}})}
	if e := n.checkCanRun(classRead, secOK, false); e != nil {
		t.Fatalf("draining primary, secondaryOk: %v", e)
	}
	if e := n.checkCanRun(classWrite, secOK, false); e == nil || e.Code != 10107 {
		t.Fatalf("draining primary write: want 10107, got %v", e)
	}
	n.writable, n.stepping = true, true
	if e := n.checkCanRun(classWrite, read, true); e == nil || e.Code != 10107 || e.Msg != "not master" {
		t.Fatalf("stepping primary, legacy write: want 10107 not master, got %v", e)
	}
	n.stepping = false
	if e := n.checkCanRun(classRead, read, false); e != nil {
		t.Fatalf("writable primary read: %v", e)
	}
}
