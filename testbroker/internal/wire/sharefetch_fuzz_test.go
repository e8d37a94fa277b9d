package wire_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// FuzzShareFetchResponse reads arbitrary bytes as a ShareFetch response body of the version
// the first byte picks; whatever kmsg decodes, the hand encoder, with every partition's
// records moved into Records and cut where the second byte's seed says, must write as kmsg
// writes it, copied or as a Frame of pieces.
func FuzzShareFetchResponse(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for version := range kmsg.NewPtrShareFetchResponse().MaxVersion() + 1 {
		for range 4 {
			c := randomShareFetch(f, r, version)
			f.Add(append([]byte{byte(version), byte(r.IntN(256))}, c.want.AppendTo(nil)...))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}) // one topic, truncated

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		want := kmsg.NewPtrShareFetchResponse()
		want.Version = int16(data[0]) % (want.MaxVersion() + 1)
		if want.ReadFrom(data[2:]) != nil {
			return
		}
		r := rand.New(rand.NewPCG(uint64(data[1]), 0))
		got := &wire.ShareFetchResponse{ShareFetchResponse: new(kmsg.ShareFetchResponse)}
		*got.ShareFetchResponse = *want
		got.Topics = make([]kmsg.ShareFetchResponseTopic, len(want.Topics))
		for ti, rt := range want.Topics {
			got.Topics[ti] = rt
			got.Topics[ti].Partitions = append([]kmsg.ShareFetchResponseTopicPartition(nil), rt.Partitions...)
			for pi, p := range rt.Partitions {
				var split [][]byte
				if p.Records != nil {
					split = splitRandomly(r, p.Records)
					got.Topics[ti].Partitions[pi].Records = nil
				}
				got.Records = append(got.Records, split)
			}
		}
		wantBody := want.AppendTo(nil)
		if gotBody := got.AppendTo(nil); !bytes.Equal(wantBody, gotBody) {
			t.Fatalf("v%d AppendTo\nkmsg %x\nwire %x", want.Version, wantBody, gotBody)
		}
		var fr wire.Frame
		fr.AppendResponse(78, 1, got)
		var out bytes.Buffer
		if _, err := fr.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if wantFrame := wire.AppendResponse(nil, 78, 1, want); !bytes.Equal(wantFrame, out.Bytes()) {
			t.Fatalf("v%d Frame\nkmsg %x\nwire %x", want.Version, wantFrame, out.Bytes())
		}
	})
}
