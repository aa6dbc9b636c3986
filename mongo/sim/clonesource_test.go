package sim

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Cloning in _id order by batches returns every document that stays,
// exactly once, even when others are deleted or inserted between batches.
func TestCloneBatchesInIDOrder(t *testing.T) {
	d := NewData()
	ot := OpTime{TS: bson.Timestamp{T: 1, I: 1}, T: 1}
	for i := range 10 {
		d.Apply(NewOplogEntry(ot, "i", "a.x", mustRaw(bson.D{{Key: "_id", Value: int32(i)}}), nil, time.Now()))
	}
	c := d.Coll("a", "x", false)
	seen := map[int32]int{}
	after, batches := "", 0
	for {
		docs, last, more := c.batchAfter(after, 30) // two 14-byte documents per batch
		batches++
		for _, doc := range docs {
			seen[doc.Lookup("_id").Int32()]++
		}
		if batches == 1 {
			d.Apply(NewOplogEntry(ot, "d", "a.x", mustRaw(bson.D{{Key: "_id", Value: int32(0)}}), nil, time.Now()))
			d.Apply(NewOplogEntry(ot, "d", "a.x", mustRaw(bson.D{{Key: "_id", Value: int32(5)}}), nil, time.Now()))
		}
		after = last
		if !more {
			break
		}
	}
	for i := range int32(10) {
		if want := map[bool]int{true: 0, false: 1}[i == 5]; seen[i] != want {
			t.Errorf("_id %d cloned %d times, want %d", i, seen[i], want)
		}
	}
	if batches != 5 {
		t.Errorf("%d batches, want 5", batches)
	}
}

// A broken connection to the sync source is "unreachable" (retried, not a
// failed attempt); an error reply is a failure.
func TestCloneCallClassifiesErrors(t *testing.T) {
	a, b := net.Pipe()
	_ = b.Close()
	if _, err := cloneCall(&peerConn{nc: a, br: bufio.NewReader(a)}, bson.D{{Key: "_simClone", Value: 1}}); !isUnreachable(err) {
		t.Errorf("broken connection: %v", err)
	}
	a, b = net.Pipe()
	go func() {
		if _, err := ReadMessage(b); err != nil {
			return
		}
		reply := mustRaw(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no"}, {Key: "code", Value: int32(1)}})
		_, _ = b.Write(EncodeMsg(1, 0, 0, reply))
	}()
	if _, err := cloneCall(&peerConn{nc: a, br: bufio.NewReader(a)}, bson.D{{Key: "_simClone", Value: 1}}); err == nil || isUnreachable(err) {
		t.Errorf("error reply: %v", err)
	}
}

func isUnreachable(err error) bool {
	var ue *unreachableError
	return errors.As(err, &ue)
}
