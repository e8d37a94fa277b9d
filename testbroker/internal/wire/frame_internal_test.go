package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errStalled = errors.New("stalled")

// stalledFrame announces a frame of size bytes and sends only sent of them; reads past that
// fail with errStalled, as a read deadline would end them.
func stalledFrame(size, sent int) io.Reader {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = append(b, bytes.Repeat([]byte{1}, sent)...)
	return io.MultiReader(bytes.NewReader(b), errReader{})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errStalled }

// A frame's buffer holds at most twice what arrived (and at least the first chunk): announcing
// 100 MiB reserves nothing like 100 MiB.
func TestReadFrameBufferGrowsWithWhatArrived(t *testing.T) {
	tests := []struct {
		name    string
		sent    int
		wantCap int
	}{
		{"nothing after the size", 0, firstFrameChunk},
		{"a few bytes", 10, firstFrameChunk},
		{"exactly the first chunk", firstFrameChunk, 2 * firstFrameChunk},
		{"one MiB", 1 << 20, 2 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf, err := readFrame(stalledFrame(DefaultMaxFrameBytes, tt.sent), DefaultMaxFrameBytes)
			require.ErrorIs(t, err, errStalled)
			assert.Len(t, buf, tt.sent)
			assert.Equal(t, tt.wantCap, cap(buf))
		})
	}
}

// A frame of up to wholeFrameBytes is read into one buffer of its size, allocated once its size
// has arrived.
func TestReadFrameWholeUpToTheBound(t *testing.T) {
	for _, n := range []int{firstFrameChunk + 1, 1 << 20, wholeFrameBytes} {
		buf, err := readFrame(stalledFrame(n, 10), DefaultMaxFrameBytes)
		require.ErrorIs(t, err, errStalled)
		assert.Len(t, buf, 10)
		assert.Equal(t, n, cap(buf), "frame of %d bytes", n)
	}
	buf, err := readFrame(stalledFrame(wholeFrameBytes+1, 10), DefaultMaxFrameBytes)
	require.ErrorIs(t, err, errStalled)
	assert.Equal(t, firstFrameChunk, cap(buf), "a larger frame grows")
}

func TestReadFrameBufferIsExactForSmallFrames(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, 100)
	buf, err := readFrame(bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, 100), payload...)), DefaultMaxFrameBytes)
	require.NoError(t, err)
	assert.Equal(t, payload, buf)
	assert.Equal(t, 100, cap(buf))
}

func TestReadFrameWholeLargeFrame(t *testing.T) {
	const n = 5<<20 + 3 // not a power of two times the first chunk
	payload := bytes.Repeat([]byte{9}, n)
	buf, err := readFrame(bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, n), payload...)), DefaultMaxFrameBytes)
	require.NoError(t, err)
	assert.Equal(t, payload, buf)
	assert.Equal(t, n, cap(buf), "the last growth stops at the frame's size")
}

// The bytes allocated to read a stalled 100 MiB frame, counted by the runtime.
func TestReadFrameStalledAllocatesLittle(t *testing.T) {
	var before, after runtime.MemStats
	r := stalledFrame(DefaultMaxFrameBytes, 10)
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(r, DefaultMaxFrameBytes)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, errStalled)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a stalled 100 MiB frame allocated %d bytes", allocated)
	assert.Less(t, allocated, uint64(1<<20))
}

// The buffers a large frame grows through are reused by the next frame: reading one allocates
// about the frame itself, not the frame and every smaller buffer before it (twice the frame).
func TestReadFrameReusesGrowthBuffers(t *testing.T) {
	const n = wholeFrameBytes + 1
	frame := append(binary.BigEndian.AppendUint32(nil, n), bytes.Repeat([]byte{3}, n)...)
	first, err := ReadFrame(bytes.NewReader(frame), DefaultMaxFrameBytes)
	require.NoError(t, err)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	second, err := ReadFrame(bytes.NewReader(frame), DefaultMaxFrameBytes)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(n+n/8), "the second read allocated %d bytes for a frame of %d", allocated, n)
	assert.Equal(t, frame[4:], second)
	assert.Equal(t, frame[4:], first, "the first frame is not a buffer handed on")
	assert.Equal(t, n, cap(second))
}
