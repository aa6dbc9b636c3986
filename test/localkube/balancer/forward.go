package balancer

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Forwarder carries out Plan.Listeners: one TCP listener per address and port,
// each connection spliced to one backend, as an L4 cloud load balancer (or
// MetalLB's userspace cousin) does. The client's address is not preserved: the
// backend sees the host's bridge address.
type Forwarder struct {
	log         zerolog.Logger
	dialTimeout time.Duration

	mu   sync.Mutex
	open map[netip.AddrPort]*listener
}

// NewForwarder returns a Forwarder with no listener.
func NewForwarder(log zerolog.Logger) *Forwarder {
	return &Forwarder{log: log, dialTimeout: 5 * time.Second, open: map[netip.AddrPort]*listener{}}
}

type listener struct {
	ln       net.Listener
	service  string
	uid      string
	backends atomic.Pointer[[]string]
	next     atomic.Uint64
	done     chan struct{} // closed when the accept loop returns

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// Apply makes the open listeners exactly want: it closes those no longer wanted
// (and their connections, as a deleted cloud load balancer drops them), opens
// the new ones and gives the others their new backends (connections already
// made stay where they are). It returns the Services (namespace/name) of the
// listeners it could not open, with the error; the next Apply tries again.
func (f *Forwarder) Apply(want []Listener) map[string]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	wanted := map[netip.AddrPort]Listener{}
	for _, w := range want {
		wanted[w.Addr] = w
	}
	for addr, l := range f.open {
		if w, ok := wanted[addr]; !ok || string(w.UID) != l.uid {
			l.close()
			delete(f.open, addr)
			f.log.Info().Str("service", l.service).Str("addr", addr.String()).Msg("listener closed")
		}
	}
	failed := map[string]error{}
	for _, w := range want {
		backends := append([]string(nil), w.Backends...)
		if l, ok := f.open[w.Addr]; ok {
			l.backends.Store(&backends)
			continue
		}
		ln, err := net.Listen("tcp", w.Addr.String())
		if err != nil {
			failed[w.Service] = err
			continue
		}
		l := &listener{ln: ln, service: w.Service, uid: string(w.UID), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
		l.backends.Store(&backends)
		f.open[w.Addr] = l
		go f.accept(l)
		f.log.Info().Str("service", w.Service).Str("addr", w.Addr.String()).Int("backends", len(backends)).Msg("listener opened")
	}
	return failed
}

// Close closes every listener and connection.
func (f *Forwarder) Close() {
	f.Apply(nil)
}

func (f *Forwarder) accept(l *listener) {
	defer close(l.done)
	for {
		c, err := l.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			f.log.Warn().Err(err).Str("service", l.service).Msg("accept failed")
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go f.splice(l, c)
	}
}

// splice connects c to the first backend that answers, starting at the next one
// round robin; with none, c is closed (a cloud load balancer without a healthy
// target refuses too).
func (f *Forwarder) splice(l *listener, c net.Conn) {
	backends := *l.backends.Load()
	var b net.Conn
	start := l.next.Add(1)
	for i := range backends {
		target := backends[(int(start)+i)%len(backends)]
		ctx, cancel := context.WithTimeout(context.Background(), f.dialTimeout)
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
		cancel()
		if err == nil {
			b = conn
			break
		}
		f.log.Debug().Err(err).Str("service", l.service).Str("backend", target).Msg("backend refused")
	}
	if b == nil {
		_ = c.Close()
		return
	}
	if !l.track(c, b) {
		return
	}
	defer l.untrack(c, b)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(b, c) }()
	go func() { defer wg.Done(); pipe(c, b) }()
	wg.Wait()
}

// pipe copies from src to dst, then half-closes dst so that the peer sees the
// end of the stream while the other direction goes on.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

func (l *listener) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		l.conns[c] = struct{}{}
	}
	return true
}

func (l *listener) untrack(conns ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(l.conns, c)
	}
}

// close stops accepting, waits for the accept loop (so that the port is free
// for a listener opened next), and closes the connections in flight.
func (l *listener) close() {
	_ = l.ln.Close()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
}
