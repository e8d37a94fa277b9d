package server

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// hostAddress writes addresses as Java's InetAddress.getHostAddress, which ACL hosts match.
func TestHostAddress(t *testing.T) {
	for addr, want := range map[net.Addr]string{
		&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5}:       "127.0.0.1",
		&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 5}: "10.0.0.1",
		&net.TCPAddr{IP: net.ParseIP("::1"), Port: 5}:             "0:0:0:0:0:0:0:1",
		&net.TCPAddr{IP: net.ParseIP("fe80::1:abcd"), Port: 5}:    "fe80:0:0:0:0:0:1:abcd",
		&net.UnixAddr{Name: "broker-0.testbroker.invalid:9092"}:   "broker-0.testbroker.invalid",
		&net.UnixAddr{Name: "noport"}:                             "noport",
	} {
		assert.Equal(t, want, hostAddress(addr), "%v", addr)
	}
}
