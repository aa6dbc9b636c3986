package sim

import (
	"fmt"
	"net"
	"testing"
)

// A member whose pod was recreated together with the others may have
// answered isSelf from stale DNS: "me" for another member's name (that name
// still resolved to the address this pod now holds). Two hosts then map to
// it and it stays REMOVED, unless the retry forgets the stale answers.
func TestSelfFoundAgainAfterAStaleMeAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // nothing answers there: an _isSelf to another host fails, "not me"
	n := &Node{cfg: Config{Port: port}, bindAddrs: []net.IP{nil}, isSelfMemo: map[string]bool{}}
	own, other := fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.2:%d", port)
	cfg := &RSConfig{ID: "rs", Version: 1, Term: 2, Members: []Member{{ID: 0, Host: other}, {ID: 1, Host: own}}}
	n.isSelfMemo[other] = true // the stale "me"

	if self, err := n.findSelf(cfg); err == nil {
		t.Fatalf("with the stale answer: self %d, want the error of two hosts mapping to this node", self)
	}
	n.mu.Lock()
	n.forgetSelfAnswersLocked(cfg)
	n.mu.Unlock()
	self, err := n.findSelf(cfg)
	if err != nil || self != 1 {
		t.Fatalf("after forgetting: self %d, err %v; want 1", self, err)
	}
}
