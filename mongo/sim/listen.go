package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

func (n *Node) listen() error {
	ips, err := bindIPs(n.cfg)
	if err != nil {
		return err
	}
	var addrs []string
	for _, ip := range ips {
		if ip.IsUnspecified() {
			// One wildcard covers every address; "::" is dual-stack on Linux.
			addrs, n.bindAddrs = []string{ip.String()}, []net.IP{nil}
			break
		}
		addrs = append(addrs, ip.String())
		n.bindAddrs = append(n.bindAddrs, ip)
	}
	for _, a := range addrs {
		l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(n.cfg.Port)))
		if err != nil {
			for _, x := range n.listeners {
				_ = x.Close()
			}
			return &ListenError{fmt.Sprintf("Error setting up listener: SocketException: Address already in use (%s:%d)", a, n.cfg.Port)}
		}
		n.listeners = append(n.listeners, l)
	}
	// Outgoing connections leave from our own specific address.
	for _, ip := range n.bindAddrs {
		if ip != nil && !ip.IsUnspecified() {
			n.localIP = ip
			break
		}
	}
	return nil
}

// bindIPs resolves --bind_ip (names to their IPv4 addresses, as mongod
// does without --ipv6); --bind_ip_all is the IPv4 wildcard. A wildcard
// sorts first: "::" before "0.0.0.0" before specific addresses.
func bindIPs(cfg Config) ([]net.IP, error) {
	if cfg.BindIPAll {
		return []net.IP{net.IPv4zero}, nil
	}
	var out []net.IP
	for _, h := range cfg.BindIP {
		if ip := net.ParseIP(h); ip != nil {
			out = append(out, ip)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		found, err := net.DefaultResolver.LookupIP(ctx, "ip4", h)
		cancel()
		if err != nil || len(found) == 0 {
			return nil, &OptionError{fmt.Sprintf("getaddrinfo(\"%s\") failed: Name or service not known", h)}
		}
		out = append(out, found...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		rank := func(ip net.IP) int {
			switch {
			case ip.Equal(net.IPv6unspecified):
				return 0
			case ip.IsUnspecified():
				return 1
			}
			return 2
		}
		return rank(out[i]) < rank(out[j])
	})
	return out, nil
}

// ListenError is a port that cannot be bound; mongod exits with code 48.
type ListenError struct{ Msg string }

func (e *ListenError) Error() string { return e.Msg }

type conn struct {
	n     *Node
	nc    net.Conn
	id    int64
	local bool // peer is a loopback address
	users []authedUser
	// authzCache holds the users' privileges resolved for one authzGen.
	authzCache *authzCache
	internal   atomic.Bool // set by the handler goroutine, read by closeClientConns
	sawHello   bool
	sasl       *saslConv
	client     bson.Raw
	helloOk    bool
}

func (n *Node) accept(l net.Listener) {
	for {
		nc, err := l.Accept()
		if err != nil {
			select {
			case <-n.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go n.serveConn(nc)
	}
}

func (n *Node) serveConn(nc net.Conn) {
	raw := nc
	nc, err := n.acceptTLS(raw)
	if err != nil {
		if errors.Is(err, errPlainOnRequireTLS) || errors.Is(err, errHandshake) {
			n.logI("NETWORK", 22988, "Error receiving request from client. Ending connection from remote", func(e *zerolog.Event) {
				e.Str("remote", raw.RemoteAddr().String()).Str("err", err.Error())
			})
		}
		_ = raw.Close()
		return
	}
	n.connMu.Lock()
	n.connTotal++
	c := &conn{n: n, nc: nc, id: n.connTotal}
	n.conns[c] = struct{}{}
	n.connCount++
	n.connMu.Unlock()
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.local = ta.IP.IsLoopback()
	}
	defer func() {
		if r := recover(); r != nil {
			n.logS("E", "NETWORK", 22988, "Connection handler panicked; closing only this connection", func(e *zerolog.Event) { e.Interface("panic", fmt.Sprint(r)) })
		}
		_ = nc.Close()
		n.connMu.Lock()
		delete(n.conns, c)
		n.connCount--
		n.connMu.Unlock()
	}()
	for {
		msg, err := ReadMessage(nc)
		if err != nil {
			if errors.Is(err, errBadMessage) {
				n.logI("NETWORK", 22989, "Error receiving request from client. Ending connection from remote", func(e *zerolog.Event) {
					e.Str("remote", nc.RemoteAddr().String()).Str("err", err.Error()).Int64("connectionId", c.id)
				})
			}
			return
		}
		n.metrics.bytesIn.Add(int64(len(msg)))
		n.metrics.requests.Add(1)
		req, err := ParseMessage(msg)
		if err != nil {
			n.logI("NETWORK", 22989, "Error receiving request from client. Ending connection from remote", func(e *zerolog.Event) {
				e.Str("remote", nc.RemoteAddr().String()).Str("err", err.Error()).Int64("connectionId", c.id)
			})
			return
		}
		reply, closeAfter := c.handle(req)
		if req.MoreToCome {
			continue
		}
		if reply == nil {
			return // shutdown: close without replying
		}
		b, err := bson.Marshal(reply)
		if err != nil {
			b, _ = bson.Marshal(n.errorDoc(cerr(1, "cannot encode reply: %v", err), false))
		}
		var out []byte
		if req.Legacy {
			out = EncodeReply(wiremessage.NextRequestID(), req.RequestID, b)
		} else {
			out = EncodeMsg(wiremessage.NextRequestID(), req.RequestID, 0, b)
		}
		_ = nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
		if _, err := nc.Write(out); err != nil {
			return
		}
		n.metrics.bytesOut.Add(int64(len(out)))
		if closeAfter {
			return
		}
	}
}

// closeClientConns drops every client connection except internal ones,
// as mongod does on ROLLBACK or REMOVED.
func (n *Node) closeClientConns() {
	n.connMu.Lock()
	defer n.connMu.Unlock()
	for c := range n.conns {
		if !c.internal.Load() {
			_ = c.nc.Close()
		}
	}
}
