package server

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/fault"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

// api is one Kafka API the cluster implements: the versions it accepts, its handler, the
// response that fails a request as a whole (an injected error code, an unsupported version)
// and the topics and groups a request names (what fault rules match on).
type api struct {
	min, max int16
	handle   func(b *Broker, cn *conn, req kmsg.Request) kmsg.Response
	// fail returns the response to req with code in every error field; nil means the request
	// takes no response (acks=0 produce) and the connection is closed instead.
	fail func(req kmsg.Request, code int16) kmsg.Response
	// scope returns the topics and groups req names.
	scope func(c *Cluster, req kmsg.Request) (topics, groups []string)
}

// apis lists every implemented API, by key. Each API registers itself, from the file that
// holds its handler, with register. Versions are those current franz-go and Kafka 4.2
// clients send; ApiVersions advertises them, capped by Config.MaxVersions.
var apis = map[int16]api{}

// register adds the API key, accepting versions min..max, with its handler, its failure
// response and its scope; none may be nil.
//
// fail builds the response that fails a request as a whole: every error-code field carries
// code, and the request's topics and partitions, config resources, groups and coordinator keys
// are echoed so that a client can match each entry to what it asked for (franz-go looks up
// produce and fetch partitions by topic and index). Offsets, epochs and leader ids are -1, as
// in Kafka's error responses; the response gets the request's version here. Kafka's own error
// responses (getErrorResponse) are leaner, and only options (injected faults, version caps)
// reach fail, so it errs on the side of telling the client everywhere: where Kafka sends only a
// top-level code (Fetch v13+, ShareFetch, ShareAcknowledge) it also echoes every partition with
// the code, and it leaves error messages empty where Kafka repeats the code's description.
//
// scope returns the topic names and group ids a request names, for fault rules; topic ids
// resolve to names through the cluster's topics, and an unknown id names nothing.
func register[R kmsg.Request](key, min, max int16,
	handle func(b *Broker, cn *conn, req R) kmsg.Response,
	fail func(req R, code int16) kmsg.Response,
	scope func(c *Cluster, req R) (topics, groups []string),
) {
	if _, dup := apis[key]; dup {
		panic("server: API " + kmsg.NameForKey(key) + " registered twice")
	}
	if handle == nil || fail == nil || scope == nil {
		panic("server: API " + kmsg.NameForKey(key) + " registered without a handler, failure response or scope")
	}
	apis[key] = api{
		min: min,
		max: max,
		handle: func(b *Broker, cn *conn, req kmsg.Request) kmsg.Response {
			return handle(b, cn, req.(R))
		},
		fail: func(req kmsg.Request, code int16) kmsg.Response {
			resp := fail(req.(R), code)
			if resp != nil {
				resp.SetVersion(req.GetVersion())
			}
			return resp
		},
		scope: func(c *Cluster, req kmsg.Request) ([]string, []string) { return scope(c, req.(R)) },
	}
}

// scope collects the topics and groups a request names, for an API's scope function.
type scope struct {
	c              *Cluster
	topics, groups []string
}

func (s *scope) topic(name string) { s.topics = append(s.topics, name) }

func (s *scope) group(id string) { s.groups = append(s.groups, id) }

// topicID adds the topic with this id, if the cluster has one.
func (s *scope) topicID(id [16]byte) {
	if t := s.c.meta.TopicByID(id); t != nil {
		s.topics = append(s.topics, t.Name)
	}
}

// nameOrID adds a topic a request names by name before some version and by id after:
// whichever is set.
func (s *scope) nameOrID(name string, id [16]byte) {
	if name != "" {
		s.topic(name)
	} else {
		s.topicID(id)
	}
}

// configResource adds a config resource that is a topic or a group.
func (s *scope) configResource(typ kmsg.ConfigResourceType, name string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		s.topic(name)
	case kmsg.ConfigResourceTypeGroupConfig:
		s.group(name)
	}
}

func (s *scope) result() (topics, groups []string) { return s.topics, s.groups }

// noScope is the scope of a request that names no topic and no group.
func noScope[R kmsg.Request](*Cluster, R) (topics, groups []string) { return nil, nil }

// versionRange returns the versions the cluster accepts for key after caps; ok is false for an
// API it does not implement or one capped below its minimum.
func (c *Cluster) versionRange(key int16) (min, max int16, ok bool) {
	a, found := apis[key]
	if !found {
		return 0, 0, false
	}
	max = a.max
	if capped, isCapped := c.cfg.MaxVersions[key]; isCapped && capped < max {
		max = capped
	}
	return a.min, max, max >= a.min
}

// handle runs one request: on a connection not yet authenticated, only what SASL admits
// (handleBeforeAuth); then version checks, injected faults, then the API's handler. A nil
// response with keep true means no response is sent (acks=0 produce); keep false closes the
// connection.
func (b *Broker) handle(cn *conn, req *wire.Request) (resp kmsg.Response, keep bool) {
	if cn.sasl != nil && cn.sasl.state == saslComplete && !b.checkSession(cn, req) {
		return nil, false
	}
	if cn.sasl != nil && cn.sasl.state != saslComplete {
		return b.handleBeforeAuth(cn, req)
	}
	return b.handleAuthenticated(cn, req)
}

// handleAuthenticated runs one request past authentication; see handle.
func (b *Broker) handleAuthenticated(cn *conn, req *wire.Request) (resp kmsg.Response, keep bool) {
	c := b.c
	min, max, ok := c.versionRange(req.Key)
	if req.Key == wire.ApiVersionsKey && (req.Body == nil || req.Version < min || req.Version > max) {
		// Kafka answers an ApiVersions of a version it does not know, without parsing it,
		// with a v0 response that lists only its ApiVersions range (KIP-511), so that the
		// client can retry with a version both know.
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		if ok {
			resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: wire.ApiVersionsKey, MinVersion: min, MaxVersion: max}}
		}
		return resp, true
	}
	if !ok {
		reason := "API " + kmsg.NameForKey(req.Key) + " is not implemented by testbroker"
		if _, implemented := apis[req.Key]; implemented {
			reason = "API " + kmsg.NameForKey(req.Key) + " is disabled: MaxVersion caps it below its lowest version"
		}
		c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(), "reason", reason)
		return nil, false
	}
	if req.Body == nil || req.Version < min || req.Version > max {
		if req.Body == nil {
			c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(),
				"reason", "unsupported version "+kmsg.NameForKey(req.Key)+" v"+strconv.Itoa(int(req.Version)))
			return nil, false
		}
		return b.errorReply(cn, req, kerr.UnsupportedVersion.Code)
	}
	if act, hit := c.faults.Match(b.faultRequest(req)); hit {
		if act.Delay > 0 {
			if !b.sleep(cn, act.Delay, act.Taken) {
				return nil, false
			}
		} else {
			act.Taken()
		}
		if act.Drop {
			c.logger.Info("dropping connection (injected fault)", "broker", b.id, "api", kmsg.NameForKey(req.Key))
			return nil, false
		}
		if act.ErrorCode != 0 {
			return b.errorReply(cn, req, act.ErrorCode)
		}
	}
	resp = apis[req.Key].handle(b, cn, req.Body)
	if resp == nil {
		return nil, true
	}
	resp.SetVersion(req.Version)
	return resp, true
}

// errorReply answers req with code in every error field. A request that takes no response
// (acks=0 produce) closes the connection instead, as Kafka does, so that the client notices.
func (b *Broker) errorReply(cn *conn, req *wire.Request, code int16) (kmsg.Response, bool) {
	resp := apis[req.Key].fail(req.Body, code)
	if resp == nil {
		name := strconv.Itoa(int(code))
		if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			name = ke.Message
		}
		b.c.logger.Warn("closing connection", "broker", b.id, "remote", cn.nc.RemoteAddr().String(),
			"reason", name+" for a "+kmsg.NameForKey(req.Key)+" request that takes no response")
		return nil, false
	}
	return resp, true
}

// faultRequest describes a request for fault matching.
func (b *Broker) faultRequest(req *wire.Request) fault.Request {
	topics, groups := apis[req.Key].scope(b.c, req.Body)
	return fault.Request{Key: req.Key, Broker: b.id, Topics: topics, Groups: groups}
}

// sleep waits d on the cluster clock, calling parked once the wait is on the clock; it returns
// false if the connection or cluster closed first.
func (b *Broker) sleep(cn *conn, d time.Duration, parked func()) bool {
	ch := make(chan struct{})
	t := b.c.clock.AfterFunc(d, func() { close(ch) })
	parked()
	select {
	case <-ch:
		return true
	case <-cn.done:
	case <-b.c.closed:
	}
	t.Stop()
	return false
}
