package sim

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/xdg-go/scram"
)

// Internal authentication with a keyfile of one or two keys, as mongod does
// it since 4.2 (docs "Rotate Keys for Self-Managed Replica Sets": membership
// authentication holds when the members share at least one key):
//   - outgoing, a member authenticates as __system@local with the first key
//     and, when that fails with AuthenticationFailed, once more with the
//     second (mongod's authenticateInternalClient falls back to its
//     alternate credentials);
//   - incoming, any key of the keyfile opens __system@local: the SCRAM
//     exchange is checked against each key's credentials, which share one
//     salt per mechanism so the server-first message is the same for all.

// authInternal authenticates the connection as __system@local with the
// first of keys, then with the second when the first is refused.
func (p *peerConn) authInternal(keys []string, deadline time.Time) error {
	err := p.auth(keys[0], deadline)
	var ce *CmdError
	if err == nil || len(keys) < 2 || !errors.As(err, &ce) || ce.Code != 18 {
		return err
	}
	return p.auth(keys[1], deadline)
}

// systemSalt is the salt of the __system credentials of mechanism mech,
// drawn once per process and shared by every key.
func (n *Node) systemSalt(mech string) string {
	size := 28
	if mech == "SCRAM-SHA-1" {
		size = 16
	}
	salt := make([]byte, size)
	_, _ = rand.Read(salt)
	v, _ := n.systemCreds.LoadOrStore("salt/"+mech, string(salt))
	return v.(string)
}

// scramConv is one server side of a SCRAM exchange.
type scramConv interface {
	Step(challenge string) (string, error)
	Done() bool
	Valid() bool
	Username() string
}

// anyKeyConv runs one SCRAM server conversation per key of the keyfile
// over the same client messages, with one server nonce: the exchange is
// valid when any of them finds the client's proof right. The credentials
// of a user other than __system are the same in each, so it behaves as one
// conversation for them.
type anyKeyConv struct {
	convs []*scram.ServerConversation
	won   *scram.ServerConversation
}

func newAnyKeyConv(n *Node, fcn scram.HashGeneratorFcn, mech, db string) (*anyKeyConv, error) {
	nonce := make([]byte, 24)
	_, _ = rand.Read(nonce)
	gen := func() string { return base64.StdEncoding.EncodeToString(nonce) }
	c := &anyKeyConv{}
	for i := range n.keys {
		srv, err := fcn.NewServer(n.lookupKeyCreds(mech, db, i))
		if err != nil {
			return nil, err
		}
		c.convs = append(c.convs, srv.WithNonceGenerator(gen).NewConversation())
	}
	return c, nil
}

// Step feeds challenge to every conversation still in the running; the
// first to answer without error speaks for all.
func (c *anyKeyConv) Step(challenge string) (string, error) {
	var out string
	var first error
	var alive []*scram.ServerConversation
	for _, conv := range c.convs {
		r, err := conv.Step(challenge)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		if len(alive) == 0 {
			out = r
		}
		alive = append(alive, conv)
	}
	if len(alive) == 0 {
		c.won = c.convs[0]
		return "", first
	}
	c.convs, c.won = alive, alive[0]
	return out, nil
}

func (c *anyKeyConv) Done() bool       { return c.won != nil && c.won.Done() }
func (c *anyKeyConv) Valid() bool      { return c.won != nil && c.won.Valid() }
func (c *anyKeyConv) Username() string { return c.convs[0].Username() }
