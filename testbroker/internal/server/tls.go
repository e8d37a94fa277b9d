package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// tlsListen wraps listen so that every listener it opens, at Start and at StartBroker, is a
// TLS listener with the server config cfg. The handshake runs when the connection is served
// (conn.handshake), under a deadline.
func tlsListen(listen func(string) (net.Listener, error), cfg *tls.Config) func(string) (net.Listener, error) {
	return func(addr string) (net.Listener, error) {
		ln, err := listen(addr)
		if err != nil {
			return nil, err
		}
		return tls.NewListener(ln, cfg), nil
	}
}

// tlsDial wraps dial so that the replica fetchers reach the brokers' TLS listeners: the
// connection is handshaken with cfg, verifying the dialled host unless cfg names a server.
func tlsDial(dial func(context.Context, string, string) (net.Conn, error), cfg *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		cc := cfg
		if cc.ServerName == "" {
			cc = cfg.Clone()
			if host, _, err := net.SplitHostPort(address); err == nil {
				cc.ServerName = host
			}
		}
		tc := tls.Client(nc, cc)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
}

// handshake runs a TLS connection's handshake before its first request is read. It is bounded
// by testbroker.request.read.timeout.ms, a socket deadline on the real clock as the read
// limits are, so that a client that sends nothing, or plain text, never holds the broker. As
// Kafka does when an SSL handshake fails, the connection is then closed and the failure logged.
func (cn *conn) handshake(tc *tls.Conn) bool {
	lim := cn.b.c.configs.Snapshot().Connections
	if err := tc.SetDeadline(time.Now().Add(lim.RequestReadTimeout)); err != nil {
		return false
	}
	err := tc.Handshake()
	if err == nil {
		err = tc.SetDeadline(time.Time{})
	}
	if err == nil {
		cn.lastIO = time.Now()
		return true
	}
	reason := "SSL handshake failed: " + err.Error()
	switch {
	case errors.Is(err, net.ErrClosed):
		return false // closed here (Close, StopBroker, DropConnections)
	case errors.Is(err, os.ErrDeadlineExceeded):
		reason = fmt.Sprintf("SSL handshake failed: not complete after testbroker.request.read.timeout.ms (%d ms)", lim.RequestReadTimeout.Milliseconds())
	}
	cn.b.c.logger.Warn("closing connection", "broker", cn.b.id, "remote", cn.nc.RemoteAddr().String(), "reason", reason)
	return false
}
