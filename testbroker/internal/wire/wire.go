// Package wire reads and writes Kafka's framing: size-prefixed frames, request headers v1/v2,
// response headers v0/v1. Request and response bodies are kmsg types; a response is written as
// a Frame, in which a Fetch response (FetchResponse) or a ShareFetch response
// (ShareFetchResponse) refers to its record batches where they lie instead of copying them.
// Nothing here panics on bad input: every failure is an error that says what was wrong with
// the frame.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxFrameBytes is the largest request frame accepted unless configured otherwise
// (100 MiB, as Kafka's socket.request.max.bytes).
const DefaultMaxFrameBytes = 100 << 20

// ApiVersionsKey is the one API whose responses always use response header v0.
const ApiVersionsKey = 18

// Errors that describe why a frame could not be used. A server closes the connection on any of
// them, except ErrUnsupportedVersion, which it answers.
var (
	ErrFrameTooLarge      = errors.New("wire: frame larger than the maximum request size")
	ErrBadFrameSize       = errors.New("wire: negative or too small frame size")
	ErrMalformedHeader    = errors.New("wire: malformed request header")
	ErrUnknownAPIKey      = errors.New("wire: unknown API key")
	ErrUnsupportedVersion = errors.New("wire: unsupported API version")
	ErrMalformedBody      = errors.New("wire: malformed request body")
)

// Request is one decoded request.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	// Body is the decoded request. It is nil when the version is not one kmsg can decode
	// (ErrUnsupportedVersion); the header fields are still set then.
	Body kmsg.Request
}

// ReadFrame reads one size-prefixed frame from r and returns its payload (without the size).
// The payload is freshly allocated and owned by the caller: decoded bodies alias it. A frame of
// up to wholeFrameBytes is allocated at its size, as Kafka allocates every frame; a larger
// one's buffer grows as the payload arrives, so a frame that announces maxBytes and sends a few
// bytes holds a few kilobytes, not maxBytes. Once the size has been read, an EOF is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	buf, err := readFrame(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// firstFrameChunk is how much of a larger frame's payload is allocated before any of it
// arrives; each time the buffer fills, it doubles, up to the frame's size.
const firstFrameChunk = 16 << 10

// wholeFrameBytes is the largest frame read straight into a buffer of its size. A grown frame
// costs more than its copies: the log keeps produced batches in their frame, and a Fetch that
// sends batches whose pages were filled by the growth's copy rather than by the socket read cost
// the broker 2-2.5x the CPU in the kernel's send (1M x 16 B, docs/benchmarks.md). franz-go's
// produce requests are about 1 MiB per partition; 4 MiB covers a few partitions and is all a
// stalled frame of that size holds.
const wholeFrameBytes = 4 << 20

// readFrame is ReadFrame, returning on error what it had read, for tests of the buffer's size.
func readFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 8 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadFrameSize, n)
	}
	if n > int(maxBytes) {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLarge, n, maxBytes)
	}
	first := firstFrameChunk
	if n <= wholeFrameBytes {
		first = n
	}
	buf := growBuffer(nil, n, first)
	for {
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
		if len(buf) == n {
			return buf, nil
		}
		buf = growBuffer(buf, n, 2*cap(buf))
	}
}

// growBuffer returns a buffer of capacity min(n, c) holding buf's bytes. The buffer that ends
// at the frame's size is the frame and is allocated; the smaller ones on the way are only read
// into and copied out of, so they are taken from and given back to growBuffers. Fresh memory
// costs its first-touch page faults (about 4-6 ms of CPU per MiB here), and growing through
// fresh buffers touched about twice the frame's size of it.
func growBuffer(buf []byte, n, c int) []byte {
	var grown []byte
	if c >= n {
		grown = make([]byte, len(buf), n)
	} else {
		grown = takeGrowBuffer(c)[:len(buf)]
	}
	copy(grown, buf)
	if buf != nil {
		giveGrowBuffer(buf)
	}
	return grown
}

// growBuffers keeps the buffers frames grew through, firstFrameChunk<<i in growBuffers[i], a
// few of each size up to 4 MiB (16 MiB at most in all), shared by every connection. A
// sync.Pool would drop them at every collection and, per P, miss about half the time.
var growBuffers [9]chan []byte

func init() {
	for i := range growBuffers {
		growBuffers[i] = make(chan []byte, 2)
	}
}

// growClass is the index in growBuffers of capacity c, a power of two times firstFrameChunk;
// a capacity below firstFrameChunk has none (-1) and is neither pooled nor taken from the pool.
func growClass(c int) int { return bits.Len(uint(c/firstFrameChunk)) - 1 }

func takeGrowBuffer(c int) []byte {
	if i := growClass(c); i >= 0 && i < len(growBuffers) {
		select {
		case b := <-growBuffers[i]:
			return b
		default:
		}
	}
	return make([]byte, 0, c)
}

func giveGrowBuffer(b []byte) {
	if i := growClass(cap(b)); i >= 0 && i < len(growBuffers) {
		select {
		case growBuffers[i] <- b[:0]:
		default:
		}
	}
}

// ParseRequest decodes a request frame's header and body. On ErrUnsupportedVersion the returned
// Request carries the header so that the caller can answer; on any other error it is nil.
func ParseRequest(frame []byte) (*Request, error) {
	if len(frame) < 10 {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	req := &Request{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	rest := frame[8:]
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	switch {
	case idLen == -1:
	case idLen < -1 || int(idLen) > len(rest):
		return nil, fmt.Errorf("%w: client id length %d", ErrMalformedHeader, idLen)
	default:
		id := string(rest[:idLen])
		req.ClientID = &id
		rest = rest[idLen:]
	}
	body := kmsg.RequestForKey(req.Key)
	if body == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownAPIKey, req.Key)
	}
	if req.Version < 0 || req.Version > body.MaxVersion() {
		return req, fmt.Errorf("%w: %s v%d", ErrUnsupportedVersion, kmsg.NameForKey(req.Key), req.Version)
	}
	body.SetVersion(req.Version)
	if body.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	// Strings in the body alias the frame rather than being copied; frames are never reused.
	if err := body.(unsafeReader).UnsafeReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrMalformedBody, kmsg.NameForKey(req.Key), req.Version, err)
	}
	req.Body = body
	return req, nil
}

type unsafeReader interface{ UnsafeReadFrom([]byte) error }

// skipTags skips a tagged-field section of a flexible request header.
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		if _, b, err = uvarint(b); err != nil { // tag
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("%w: tagged field of %d bytes past the end", ErrMalformedHeader, size)
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad varint in tagged fields", ErrMalformedHeader)
	}
	return v, b[n:], nil
}

// AppendResponse appends a whole response frame (size, header, body) to dst. The header is v1
// (with an empty tag section) for flexible versions, v0 otherwise; ApiVersions is always v0.
func AppendResponse(dst []byte, key int16, correlationID int32, resp kmsg.Response) []byte {
	f := Frame{B: dst, flat: true}
	f.AppendResponse(key, correlationID, resp)
	return f.B
}

// Frame holds outgoing frames as bytes in B interleaved with slices that are written from where
// they lie, so that a response does not copy large byte fields (record batches) into its frame.
// The zero value is an empty frame.
type Frame struct {
	// B holds everything but the referenced slices; encoders append to it.
	B    []byte
	refs []ref
	iov  [][]byte // WriteTo's vectors, kept for the next frame
	flat bool     // Ref copies every slice: the frame is only B
	tmp  []byte   // scratch for encoders that size a field before writing it
}

// ref is a slice written at position at of B, before B[at:].
type ref struct {
	at   int
	data []byte
}

// minRef is the smallest slice Ref refers to rather than copies: a vector in a write costs
// more than copying a few kilobytes.
const minRef = 4 << 10

// FrameAppender is a response that appends its body to a Frame itself, referring to its large
// byte fields instead of copying them. Its AppendTo must produce the same bytes.
type FrameAppender interface {
	AppendFrame(f *Frame)
}

// AppendResponse appends a whole response frame, as the function AppendResponse does, using
// resp's AppendFrame when it has one.
func (f *Frame) AppendResponse(key int16, correlationID int32, resp kmsg.Response) {
	start, at := f.Len(), len(f.B)
	f.B = append(f.B, 0, 0, 0, 0)
	f.B = binary.BigEndian.AppendUint32(f.B, uint32(correlationID))
	if resp.IsFlexible() && key != ApiVersionsKey {
		f.B = append(f.B, 0)
	}
	if fa, ok := resp.(FrameAppender); ok {
		fa.AppendFrame(f)
	} else {
		f.B = resp.AppendTo(f.B)
	}
	binary.BigEndian.PutUint32(f.B[at:], uint32(f.Len()-start-4))
}

// Ref appends b to the frame. A large b is written from where it lies, so it must not change
// until the frame has been written or reset.
func (f *Frame) Ref(b []byte) {
	if f.flat || len(b) < minRef {
		f.B = append(f.B, b...)
		return
	}
	f.refs = append(f.refs, ref{at: len(f.B), data: b})
}

// appendRecordRefs appends to b, the frame's bytes so far, the length of the concatenation of
// records (compact when flex, else an int32) and refers to each slice; it returns the frame's
// bytes after them.
func (f *Frame) appendRecordRefs(b []byte, records [][]byte, flex bool) []byte {
	n := 0
	for _, s := range records {
		n += len(s)
	}
	if flex {
		b = kbin.AppendUvarint(b, uint32(n)+1)
	} else {
		b = kbin.AppendInt32(b, int32(n))
	}
	f.B = b
	for _, s := range records {
		f.Ref(s)
	}
	return f.B
}

// Len returns the frame's length in bytes.
func (f *Frame) Len() int {
	n := len(f.B)
	for _, r := range f.refs {
		n += len(r.data)
	}
	return n
}

// Reset empties the frame, keeping its buffers but no referenced slice.
func (f *Frame) Reset() {
	f.B = f.B[:0]
	clear(f.refs)
	f.refs = f.refs[:0]
}

// WriteTo writes the frame to w: with one write of B when nothing is referenced, otherwise as
// net.Buffers, which a TCP connection writes with writev.
func (f *Frame) WriteTo(w io.Writer) (int64, error) {
	if len(f.refs) == 0 {
		n, err := w.Write(f.B)
		return int64(n), err
	}
	iov, prev := f.iov[:0], 0
	for _, r := range f.refs {
		if r.at > prev {
			iov = append(iov, f.B[prev:r.at])
		}
		iov = append(iov, r.data)
		prev = r.at
	}
	if prev < len(f.B) {
		iov = append(iov, f.B[prev:])
	}
	f.iov = iov
	bufs := net.Buffers(iov)
	n, err := bufs.WriteTo(w)
	clear(iov) // WriteTo clears only what it wrote
	return n, err
}

// AppendRequest appends a whole request frame (size, header v1 or v2, body) to dst. The fake
// cluster uses it for its own inter-broker requests and tests use it to speak raw kmsg.
func AppendRequest(dst []byte, correlationID int32, clientID *string, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if clientID == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(*clientID)))
		dst = append(dst, *clientID...)
	}
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
