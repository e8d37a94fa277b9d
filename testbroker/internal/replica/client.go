package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxResponseBytes bounds a response frame a fetcher accepts from a leader: a fetch response
// is at most replica.fetch.response.max.bytes plus its framing, and this leaves room for any
// setting a test uses.
const maxResponseBytes = 256 << 20

// client is a follower's connection to a leader's listener: the requests of Kafka's wire
// protocol, one at a time, with the versions the leader's ApiVersions allows.
type client struct {
	nc       net.Conn
	f        *kmsg.RequestFormatter
	corr     int32
	versions map[int16]int16 // the leader's maximum version per API key
	buf      []byte
	stop     func() bool // stops closing nc when the context ends
}

// dial connects to addr, asks the leader for its API versions and authenticates with auth, if
// set.
func dial(ctx context.Context, d func(context.Context, string, string) (net.Conn, error), addr, clientID string,
	auth func(func(kmsg.Request, kmsg.Response) error) error,
) (*client, error) {
	nc, err := d(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &client{nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	c.stop = context.AfterFunc(ctx, func() { nc.Close() })
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := c.roundTrip(req, resp); err != nil {
		c.close()
		return nil, err
	}
	if resp.ErrorCode != 0 {
		c.close()
		return nil, fmt.Errorf("replica: ApiVersions from %s: error code %d", addr, resp.ErrorCode)
	}
	c.versions = make(map[int16]int16, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		c.versions[k.ApiKey] = k.MaxVersion
	}
	if auth != nil {
		if err := auth(c.roundTrip); err != nil {
			c.close()
			return nil, fmt.Errorf("replica: authenticating to %s: %w", addr, err)
		}
	}
	return c, nil
}

func (c *client) close() {
	c.stop()
	c.nc.Close()
}

// version returns the version to send req at: the highest both sides know, or -1 when the
// leader does not offer the API.
func (c *client) version(req kmsg.Request) int16 {
	v, ok := c.versions[req.Key()]
	if !ok {
		return -1
	}
	return min(v, req.MaxVersion())
}

// roundTrip sends req at the version it carries and reads its response into resp.
func (c *client) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	c.corr++
	c.buf = c.f.AppendRequest(c.buf[:0], req, c.corr)
	if _, err := c.nc.Write(c.buf); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxResponseBytes {
		return fmt.Errorf("replica: response frame of %d bytes", n)
	}
	// A fresh buffer per response: the records of a fetch response alias it until the log has
	// copied them.
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return err
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return fmt.Errorf("replica: response correlation id %d, want %d", corr, c.corr)
	}
	body = body[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	return resp.ReadFrom(body)
}

var errShortHeader = errors.New("replica: response header tags cut short")

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errShortHeader
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errShortHeader
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, errShortHeader
		}
		b = b[n+int(size):]
	}
	return b, nil
}
