package sim

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// errPlainOnRequireTLS is mongod's refusal of a plain connection under
// requireTLS (SSLHandshakeFailed); the connection is closed without a reply.
var errPlainOnRequireTLS = errors.New("SSLHandshakeFailed: The server is configured to only allow SSL connections")

// tlsRecordHandshake is the first byte of a TLS ClientHello record; a
// MongoDB wire message starts with its little-endian length instead.
const tlsRecordHandshake = 0x16

// tlsHandshakeTimeout bounds an accepted connection's TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// peekedConn is a connection whose first bytes were read to tell TLS from plain.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// acceptTLS applies --tlsMode to an accepted connection, as mongod does:
// requireTLS serves TLS only, preferTLS and allowTLS serve TLS and plain
// clients on the same port (told apart by the first byte), disabled plain only.
// The TLS handshake happens here, so a client refused for its certificate
// (see newTLSSettings) is logged as mongod logs it.
func (n *Node) acceptTLS(nc net.Conn) (net.Conn, error) {
	if n.tlsConf == nil {
		return nc, nil
	}
	r := bufio.NewReader(nc)
	first, err := r.Peek(1)
	if err != nil {
		return nil, err
	}
	pc := &peekedConn{Conn: nc, r: r}
	if first[0] == tlsRecordHandshake {
		tc := tls.Server(pc, n.tlsConf)
		ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			if n.tlsConf.ClientAuth == tls.RequireAndVerifyClientCert && len(tc.ConnectionState().PeerCertificates) == 0 {
				return nil, errNoPeerCert
			}
			return nil, fmt.Errorf("%w: %w", errHandshake, err)
		}
		return tc, nil
	}
	if n.cfg.TLSMode == "requireTLS" {
		return nil, errPlainOnRequireTLS
	}
	return pc, nil
}

// dialsTLS: members connect to each other with TLS under preferTLS and
// requireTLS, plain under allowTLS (mongod's outgoing rule).
func (n *Node) dialsTLS() bool {
	return n.tlsConf != nil && (n.cfg.TLSMode == "requireTLS" || n.cfg.TLSMode == "preferTLS")
}
