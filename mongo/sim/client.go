package sim

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

// peerConn is an outgoing connection to another member, authenticated as
// the internal __system user when the set runs with a keyFile.
type peerConn struct {
	nc net.Conn
	br *bufio.Reader
}

// dialPeer connects from our own bound address (so faults injected by
// address apply) and authenticates with the keyfile.
func (n *Node) dialPeer(host string, timeout time.Duration) (*peerConn, error) {
	d := net.Dialer{Timeout: timeout}
	if n.localIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: n.localIP}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if n.dialsTLS() {
		tc := tls.Client(nc, n.tlsSet.client(n.cfg, host))
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	p := &peerConn{nc: nc, br: bufio.NewReader(nc)}
	if n.keyFile != "" {
		if err := p.authInternal(n.keys, time.Now().Add(timeout)); err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	return p, nil
}

func (p *peerConn) close() {
	if p != nil && p.nc != nil {
		_ = p.nc.Close()
	}
}

// run sends one command and returns the reply; ok:0 replies become errors.
func (p *peerConn) run(cmd bson.D, deadline time.Time) (bson.Raw, error) {
	b, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	_ = p.nc.SetDeadline(deadline)
	if _, err := p.nc.Write(EncodeMsg(wiremessage.NextRequestID(), 0, 0, b)); err != nil {
		return nil, err
	}
	msg, err := ReadMessage(p.br)
	if err != nil {
		return nil, err
	}
	_, _, _, op, rem, ok := wiremessage.ReadHeader(msg)
	if !ok || op != wiremessage.OpMsg {
		return nil, fmt.Errorf("unexpected reply opcode %v", op)
	}
	_, rem, ok = wiremessage.ReadMsgFlags(rem)
	if !ok {
		return nil, fmt.Errorf("short reply")
	}
	_, rem, ok = wiremessage.ReadMsgSectionType(rem)
	if !ok {
		return nil, fmt.Errorf("short reply")
	}
	doc, _, ok := wiremessage.ReadMsgSectionSingleDocument(rem)
	if !ok {
		return nil, fmt.Errorf("bad reply")
	}
	raw := bson.Raw(doc)
	if err := raw.Validate(); err != nil {
		return nil, err
	}
	if okv, _ := raw.Lookup("ok").AsFloat64OK(); okv != 1 {
		code, _ := raw.Lookup("code").AsInt64OK()
		msg, _ := raw.Lookup("errmsg").StringValueOK()
		return raw, &CmdError{Code: int32(code), Msg: msg}
	}
	return raw, nil
}

// auth runs SCRAM-SHA-256 as __system@local with the keyfile as password.
func (p *peerConn) auth(key string, deadline time.Time) error {
	client, err := scram.SHA256.NewClient("__system", key, "")
	if err != nil {
		return err
	}
	conv := client.NewConversation()
	first, err := conv.Step("")
	if err != nil {
		return err
	}
	r, err := p.run(bson.D{{Key: "saslStart", Value: int32(1)}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte(first)}}, {Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}},
		{Key: "$db", Value: "local"}}, deadline)
	if err != nil {
		return fmt.Errorf("keyfile authentication failed: %w", err)
	}
	cid := r.Lookup("conversationId")
	_, payload, _ := r.Lookup("payload").BinaryOK()
	final, err := conv.Step(string(payload))
	if err != nil {
		return err
	}
	r, err = p.run(bson.D{{Key: "saslContinue", Value: int32(1)}, {Key: "conversationId", Value: cid},
		{Key: "payload", Value: bson.Binary{Data: []byte(final)}}, {Key: "$db", Value: "local"}}, deadline)
	if err != nil {
		return fmt.Errorf("keyfile authentication failed: %w", err)
	}
	_, payload, _ = r.Lookup("payload").BinaryOK()
	if _, err := conv.Step(string(payload)); err != nil {
		return err
	}
	return nil
}

// callPeer dials, runs one command and closes.
func (n *Node) callPeer(host string, cmd bson.D, timeout time.Duration) (bson.Raw, error) {
	p, err := n.dialPeer(host, timeout)
	if err != nil {
		return nil, err
	}
	defer p.close()
	return p.run(cmd, time.Now().Add(timeout))
}

// isSelfLocal decides from addresses alone: same port and a name that
// resolves to an address we are bound to (any local one when bound to all).
// decided is false when only _isSelf can tell.
func (n *Node) isSelfLocal(host string) (self, decided bool) {
	h, ps, err := net.SplitHostPort(host)
	if err != nil {
		return false, true
	}
	port, _ := strconv.Atoi(ps)
	if port != n.cfg.Port {
		return false, true
	}
	n.mu.Lock()
	v, ok := n.isSelfMemo[host]
	n.mu.Unlock()
	if ok {
		return v, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", h)
	cancel()
	if err == nil {
		local := localAddrs()
		for _, ip := range ips {
			for _, b := range n.bindAddrs {
				if (b == nil || b.IsUnspecified()) && local[ip.String()] || b != nil && b.Equal(ip) {
					n.memoSelf(host, true)
					return true, true
				}
			}
		}
	}
	return false, false
}

// isSelfRemote asks host for its process id (mongod's _isSelf command).
func (n *Node) isSelfRemote(host string) bool {
	r, err := n.callPeer(host, bson.D{{Key: "_isSelf", Value: int32(1)}, {Key: "$db", Value: "admin"}}, 2*time.Second)
	if err != nil {
		return false
	}
	id, _ := r.Lookup("id").ObjectIDOK()
	self := id == n.processID
	n.memoSelf(host, self)
	return self
}

func (n *Node) memoSelf(host string, v bool) {
	n.mu.Lock()
	n.isSelfMemo[host] = v
	n.mu.Unlock()
}

func localAddrs() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			out[ipn.IP.String()] = true
		}
	}
	return out
}

// findSelf returns the index of this node in cfg, or -1; error if more
// than one member maps to us. Addresses decide first; only when none
// matches are the undecided hosts asked with _isSelf, in parallel.
func (n *Node) findSelf(cfg *RSConfig) (int, error) {
	var found []int
	var undecided []int
	for i, m := range cfg.Members {
		self, decided := n.isSelfLocal(m.Host)
		switch {
		case self:
			found = append(found, i)
		case !decided:
			undecided = append(undecided, i)
		}
	}
	if len(found) == 0 && len(undecided) > 0 {
		res := make([]bool, len(undecided))
		var wg sync.WaitGroup
		for k, i := range undecided {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[k] = n.isSelfRemote(cfg.Members[i].Host)
			}()
		}
		wg.Wait()
		for k, i := range undecided {
			if res[k] {
				found = append(found, i)
			}
		}
	}
	switch len(found) {
	case 0:
		return -1, nil
	case 1:
		return found[0], nil
	}
	return -1, fmt.Errorf("the hosts %s and %s all map to this node in new configuration with {version: %d, term: %d} for replica set %s",
		cfg.Members[found[0]].Host, cfg.Members[found[1]].Host, cfg.Version, cfg.Term, cfg.ID)
}

// connErrText words a failed peer call as mongod reports it in
// lastHeartbeatMessage and quorum-check errors.
func connErrText(host string, err error) string {
	var ce *CmdError
	switch {
	case errors.As(err, &ce):
		return fmt.Sprintf("%s: %s", codeName(ce.Code), ce.Msg)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("Error connecting to %s :: caused by :: Connection refused", host)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("Couldn't get a connection within the time limit of %s", host)
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("Connection closed by peer %s", host)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Sprintf("Error connecting to %s :: caused by :: Could not find address for %s: SocketException: Host not found (authoritative)", host, host)
	}
	return err.Error()
}
