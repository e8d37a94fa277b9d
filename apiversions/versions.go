package apiversions

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kshare/kshare/errors"
)

// versionRange is the versions of one API a broker accepts, both ends included.
type versionRange struct{ min, max int16 }

// Versions is what one broker supports: for each API it implements, the range of versions it
// accepts. The zero value supports nothing. A Versions is immutable, and safe to copy and share.
type Versions struct {
	apis map[kmsg.Key]versionRange
}

// FromResponse returns the versions listed in resp. A response with an error code is an error
// wrapping that code (a *errors.KafkaError); entries whose range is empty (min above max) are
// left out.
func FromResponse(resp *kmsg.ApiVersionsResponse) (Versions, error) {
	if err := errors.FromKafka(resp.ErrorCode, nil); err != nil {
		return Versions{}, fmt.Errorf("apiversions: the broker answered ApiVersions with %w", err)
	}
	v := Versions{apis: make(map[kmsg.Key]versionRange, len(resp.ApiKeys))}
	for _, k := range resp.ApiKeys {
		if k.MinVersion <= k.MaxVersion && k.MaxVersion >= 0 {
			v.apis[kmsg.Key(k.ApiKey)] = versionRange{min: max(k.MinVersion, 0), max: k.MaxVersion}
		}
	}
	return v, nil
}

// Max returns the highest version of key the broker supports, and false if it does not support
// key at all.
func (v Versions) Max(key kmsg.Key) (int16, bool) {
	r, ok := v.apis[key]
	return r.max, ok
}

// Supports reports whether the broker accepts version of key.
func (v Versions) Supports(key kmsg.Key, version int16) bool {
	r, ok := v.apis[key]
	return ok && r.min <= version && version <= r.max
}

// Choose returns the version of key to send to the broker from a client that supports up to
// clientMax: the lower of clientMax and the broker's highest. When the broker does not support
// key, or its lowest version is above clientMax, there is no common version, and the error
// wraps kerr.UnsupportedVersion.
func (v Versions) Choose(key kmsg.Key, clientMax int16) (int16, error) {
	r, ok := v.apis[key]
	if !ok {
		return 0, fmt.Errorf("apiversions: the broker does not support %s: %w", key.Name(), kerr.UnsupportedVersion)
	}
	if clientMax < r.min {
		return 0, fmt.Errorf("apiversions: the broker supports %s v%d to v%d, the client at most v%d: %w",
			key.Name(), r.min, r.max, clientMax, kerr.UnsupportedVersion)
	}
	return min(clientMax, r.max), nil
}

// Cap returns the versions a kgo.Client sends to this broker: each range is capped at the
// highest version kmsg implements for the API and at client's (the client's kgo.MaxVersions,
// nil for none). APIs left with no common version are dropped, as are APIs client does not list,
// which kgo refuses to send.
func (v Versions) Cap(client *kversion.Versions) Versions {
	capped := Versions{apis: make(map[kmsg.Key]versionRange, len(v.apis))}
	for key, r := range v.apis {
		req := kmsg.RequestForKey(int16(key))
		if req == nil {
			continue
		}
		r.max = min(r.max, req.MaxVersion())
		if client != nil {
			clientMax, ok := client.LookupMaxKeyVersion(int16(key))
			if !ok {
				continue
			}
			r.max = min(r.max, clientMax)
		}
		if r.min <= r.max {
			capped.apis[key] = r
		}
	}
	return capped
}

// SupportsShareGroups reports whether the broker can serve a share consumer: ShareGroupHeartbeat,
// ShareFetch and ShareAcknowledge v1 (Kafka 4.1).
func (v Versions) SupportsShareGroups() bool {
	return v.Supports(kmsg.ShareGroupHeartbeat, 1) && v.Supports(kmsg.ShareFetch, 1) && v.Supports(kmsg.ShareAcknowledge, 1)
}

// SupportsRenew reports whether the broker takes Renew acknowledgements, which need IsRenewAck:
// ShareFetch v2 and ShareAcknowledge v2 (Kafka 4.2).
func (v Versions) SupportsRenew() bool {
	return v.Supports(kmsg.ShareFetch, 2) && v.Supports(kmsg.ShareAcknowledge, 2)
}

// SupportsRecordLimitAcquire reports whether the broker takes the record-limit acquire mode
// (ShareAcquireMode 1), which needs ShareFetch v2 (Kafka 4.2).
func (v Versions) SupportsRecordLimitAcquire() bool {
	return v.Supports(kmsg.ShareFetch, 2)
}
