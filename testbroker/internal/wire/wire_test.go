package wire_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

func ptr[T any](v T) *T { return &v }

// frame returns req as a request frame without its 4-byte size, as ParseRequest takes it.
func frame(correlationID int32, clientID *string, req kmsg.Request) []byte {
	return wire.AppendRequest(nil, correlationID, clientID, req)[4:]
}

func metadataV12(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = ptr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func produceV7() *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = -1
	req.TimeoutMillis = 5000
	req.Topics = []kmsg.ProduceRequestTopic{{
		Topic:      "orders",
		Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 2, Records: []byte("batch")}},
	}}
	return req
}

func TestReadFrame(t *testing.T) {
	t.Parallel()
	sized := func(size int32, payload []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(size)), payload...)
	}
	payload := bytes.Repeat([]byte{7}, 12)
	tests := []struct {
		name    string
		in      []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{name: "whole frame", in: sized(12, payload), max: 100, want: payload},
		{name: "exactly the limit", in: sized(12, payload), max: 12, want: payload},
		{name: "over the limit", in: sized(2048, nil), max: 1024, wantErr: wire.ErrFrameTooLarge},
		{name: "negative size", in: sized(-5, payload), max: 100, wantErr: wire.ErrBadFrameSize},
		{name: "smaller than a header", in: sized(7, payload[:7]), max: 100, wantErr: wire.ErrBadFrameSize},
		{name: "truncated payload", in: sized(12, payload[:5]), max: 100, wantErr: io.ErrUnexpectedEOF},
		{name: "truncated size", in: []byte{0, 0}, max: 100, wantErr: io.ErrUnexpectedEOF},
		{name: "nothing", in: nil, max: 100, wantErr: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.ReadFrame(bytes.NewReader(tt.in), tt.max)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReadFrameReadsOneFrameAtATime(t *testing.T) {
	t.Parallel()
	var stream []byte
	stream = wire.AppendRequest(stream, 1, nil, metadataV12("a"))
	stream = wire.AppendRequest(stream, 2, ptr("client"), produceV7())
	r := bytes.NewReader(stream)
	for _, want := range []int32{1, 2} {
		f, err := wire.ReadFrame(r, wire.DefaultMaxFrameBytes)
		require.NoError(t, err)
		req, err := wire.ParseRequest(f)
		require.NoError(t, err)
		assert.Equal(t, want, req.CorrelationID)
	}
	_, err := wire.ReadFrame(r, wire.DefaultMaxFrameBytes)
	assert.ErrorIs(t, err, io.EOF)
}

func TestParseRequestRoundTrip(t *testing.T) {
	t.Parallel()
	apiVersionsV4 := kmsg.NewPtrApiVersionsRequest()
	apiVersionsV4.Version = 4
	apiVersionsV4.ClientSoftwareName = "kshare"
	apiVersionsV4.ClientSoftwareVersion = "1.0"
	apiVersionsV0 := kmsg.NewPtrApiVersionsRequest()
	fetchV13 := kmsg.NewPtrFetchRequest()
	fetchV13.Version = 13
	fetchV13.Topics = []kmsg.FetchRequestTopic{{TopicID: [16]byte{1, 2, 3}, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 4, FetchOffset: 99}}}}
	shareFetch := kmsg.NewPtrShareFetchRequest()
	shareFetch.Version = 1
	shareFetch.GroupID = ptr("g")
	shareFetch.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: [16]byte{9}, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 1}}}}

	tests := []struct {
		name     string
		clientID *string
		req      kmsg.Request
	}{
		{name: "metadata v12 (flexible header)", clientID: ptr("kgo"), req: metadataV12("orders", "payments")},
		{name: "produce v7 (non-flexible header)", clientID: ptr("producer-1"), req: produceV7()},
		{name: "null client id", req: metadataV12()},
		{name: "empty client id", clientID: ptr(""), req: produceV7()},
		{name: "api versions v4", clientID: ptr("kgo"), req: apiVersionsV4},
		{name: "api versions v0", req: apiVersionsV0},
		{name: "fetch v13 by topic id", clientID: ptr("c"), req: fetchV13},
		{name: "share fetch", clientID: ptr("c"), req: shareFetch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.ParseRequest(frame(42, tt.clientID, tt.req))
			require.NoError(t, err)
			assert.Equal(t, tt.req.Key(), got.Key)
			assert.Equal(t, tt.req.GetVersion(), got.Version)
			assert.Equal(t, int32(42), got.CorrelationID)
			assert.Equal(t, tt.clientID, got.ClientID)
			require.NotNil(t, got.Body)
			// Re-encoding the decoded body gives the same bytes: nothing was lost or misread.
			assert.Equal(t, tt.req.AppendTo(nil), got.Body.AppendTo(nil))
		})
	}
}

func TestParseRequestSkipsHeaderTags(t *testing.T) {
	t.Parallel()
	req := metadataV12("orders")
	f := frame(1, ptr("c"), req)
	// The empty tag section is the byte after the client id: replace it with one tag (tag 3,
	// 2 bytes of data), which a server must skip.
	at := 8 + 2 + 1
	require.Equal(t, byte(0), f[at])
	tagged := append(append(append([]byte{}, f[:at]...), 1, 3, 2, 0xaa, 0xbb), f[at+1:]...)
	got, err := wire.ParseRequest(tagged)
	require.NoError(t, err)
	assert.Equal(t, req.AppendTo(nil), got.Body.AppendTo(nil))
}

func TestParseRequestErrors(t *testing.T) {
	t.Parallel()
	header := func(key, version int16, clientIDLen int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 7)
		return binary.BigEndian.AppendUint16(b, uint16(clientIDLen))
	}
	valid := frame(7, ptr("c"), produceV7())
	metadata := frame(7, ptr("c"), metadataV12("t"))
	badTags := append([]byte{}, metadata...)
	badTags[8+2+1] = 0x80 // a varint that never ends

	tests := []struct {
		name       string
		in         []byte
		wantErr    error
		wantHeader bool // the header is returned for the caller to answer
	}{
		{name: "empty", in: nil, wantErr: wire.ErrMalformedHeader},
		{name: "shorter than a header", in: valid[:9], wantErr: wire.ErrMalformedHeader},
		{name: "client id past the end", in: header(0, 7, 100), wantErr: wire.ErrMalformedHeader},
		{name: "client id length below -1", in: header(0, 7, -2), wantErr: wire.ErrMalformedHeader},
		{name: "unknown api key", in: header(9999, 0, -1), wantErr: wire.ErrUnknownAPIKey},
		{name: "negative api key", in: header(-1, 0, -1), wantErr: wire.ErrUnknownAPIKey},
		{name: "version above kmsg", in: header(18, 127, -1), wantErr: wire.ErrUnsupportedVersion, wantHeader: true},
		{name: "negative version", in: header(0, -1, -1), wantErr: wire.ErrUnsupportedVersion, wantHeader: true},
		{name: "truncated body", in: valid[:len(valid)-3], wantErr: wire.ErrMalformedBody},
		{name: "no body", in: header(0, 7, -1), wantErr: wire.ErrMalformedBody},
		{name: "unterminated header tags", in: badTags[:8+2+1+1], wantErr: wire.ErrMalformedHeader},
		{name: "header tag longer than the frame", in: append(header(3, 12, -1), 1, 0, 50), wantErr: wire.ErrMalformedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.ParseRequest(tt.in)
			require.ErrorIs(t, err, tt.wantErr)
			if !tt.wantHeader {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Nil(t, got.Body)
			assert.Equal(t, int32(7), got.CorrelationID)
		})
	}
}

// TestParseRequestBodyAliasesFrame documents why frames are never reused: decoded strings
// point into the frame.
func TestParseRequestBodyAliasesFrame(t *testing.T) {
	t.Parallel()
	f := frame(1, nil, metadataV12("orders"))
	got, err := wire.ParseRequest(f)
	require.NoError(t, err)
	i := bytes.Index(f, []byte("orders"))
	require.Positive(t, i)
	f[i] = 'b'
	assert.Equal(t, "brders", *got.Body.(*kmsg.MetadataRequest).Topics[0].Topic)
}

func TestAppendResponse(t *testing.T) {
	t.Parallel()
	apiVersions := kmsg.NewPtrApiVersionsResponse()
	apiVersions.Version = 3
	apiVersions.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 4}}
	metadata := kmsg.NewPtrMetadataResponse()
	metadata.Version = 12
	metadata.ClusterID = ptr("cluster")
	produce := kmsg.NewPtrProduceResponse()
	produce.Version = 7
	produce.Topics = []kmsg.ProduceResponseTopic{{Topic: "orders", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 1, BaseOffset: 10}}}}

	tests := []struct {
		name    string
		key     int16
		resp    kmsg.Response
		tagByte bool
	}{
		{name: "flexible response has header v1", key: 3, resp: metadata, tagByte: true},
		{name: "non-flexible response has header v0", key: 0, resp: produce},
		{name: "api versions always has header v0", key: 18, resp: apiVersions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := wire.AppendResponse([]byte("prefix"), tt.key, 99, tt.resp)
			require.True(t, bytes.HasPrefix(out, []byte("prefix")))
			out = out[len("prefix"):]
			f, err := wire.ReadFrame(bytes.NewReader(out), wire.DefaultMaxFrameBytes)
			require.NoError(t, err)
			assert.Len(t, f, len(out)-4)
			assert.Equal(t, int32(99), int32(binary.BigEndian.Uint32(f)))
			body := f[4:]
			if tt.tagByte {
				require.Equal(t, byte(0), body[0])
				body = body[1:]
			}
			assert.Equal(t, tt.resp.AppendTo(nil), body)
		})
	}
}
