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

// register adds the API key, accepting versions min..max. fail and scope may be nil: the
// generic failure response (errorResponse) and no scope then apply.
func register[R kmsg.Request](key, min, max int16,
	handle func(b *Broker, cn *conn, req R) kmsg.Response,
	fail func(req R, code int16) kmsg.Response,
	scope func(c *Cluster, req R) (topics, groups []string),
) {
	if _, dup := apis[key]; dup {
		panic("server: API " + kmsg.NameForKey(key) + " registered twice")
	}
	a := api{min: min, max: max, handle: func(b *Broker, cn *conn, req kmsg.Request) kmsg.Response {
		return handle(b, cn, req.(R))
	}}
	a.fail = func(req kmsg.Request, code int16) kmsg.Response { return errorResponse(req, code) }
	if fail != nil {
		a.fail = func(req kmsg.Request, code int16) kmsg.Response { return fail(req.(R), code) }
	}
	a.scope = func(c *Cluster, req kmsg.Request) ([]string, []string) { return c.requestScope(req) }
	if scope != nil {
		a.scope = func(c *Cluster, req kmsg.Request) ([]string, []string) { return scope(c, req.(R)) }
	}
	apis[key] = a
}

func init() {
	register(0, 3, 13, (*Broker).handleProduce, nil, nil)
	register(1, 4, 18, (*Broker).handleFetch, nil, nil)
	register(2, 1, 10, func(b *Broker, _ *conn, r *kmsg.ListOffsetsRequest) kmsg.Response { return b.handleListOffsets(r) }, nil, nil)
	register(3, 0, 13, func(b *Broker, _ *conn, r *kmsg.MetadataRequest) kmsg.Response { return b.handleMetadata(r) }, nil, nil)
	register(10, 0, 6, func(b *Broker, _ *conn, r *kmsg.FindCoordinatorRequest) kmsg.Response {
		return b.handleFindCoordinator(r)
	}, nil, nil)
	register(18, 0, 4, func(b *Broker, _ *conn, r *kmsg.ApiVersionsRequest) kmsg.Response { return b.handleApiVersions(r) }, nil, nil)
	register(19, 2, 7, func(b *Broker, _ *conn, r *kmsg.CreateTopicsRequest) kmsg.Response { return b.handleCreateTopics(r) }, nil, nil)
	register(20, 1, 6, func(b *Broker, _ *conn, r *kmsg.DeleteTopicsRequest) kmsg.Response { return b.handleDeleteTopics(r) }, nil, nil)
	register(22, 0, 5, func(b *Broker, _ *conn, r *kmsg.InitProducerIDRequest) kmsg.Response {
		return b.handleInitProducerID(r)
	}, nil, nil)
	register(32, 1, 4, func(b *Broker, _ *conn, r *kmsg.DescribeConfigsRequest) kmsg.Response {
		return b.handleDescribeConfigs(r)
	}, nil, nil)
	register(37, 0, 3, func(b *Broker, _ *conn, r *kmsg.CreatePartitionsRequest) kmsg.Response {
		return b.handleCreatePartitions(r)
	}, nil, nil)
	register(44, 0, 1, func(b *Broker, _ *conn, r *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
		return b.handleIncrementalAlterConfigs(r)
	}, nil, nil)
	register(60, 0, 2, func(b *Broker, _ *conn, r *kmsg.DescribeClusterRequest) kmsg.Response {
		return b.handleDescribeCluster(r)
	}, nil, nil)
	register(76, 1, 1, (*Broker).handleShareGroupHeartbeat, nil, nil)
	register(77, 1, 1, func(b *Broker, _ *conn, r *kmsg.ShareGroupDescribeRequest) kmsg.Response {
		return b.handleShareGroupDescribe(r)
	}, nil, nil)
	register(78, 1, 2, (*Broker).handleShareFetch, nil, nil)
	register(79, 1, 2, func(b *Broker, _ *conn, r *kmsg.ShareAcknowledgeRequest) kmsg.Response {
		return b.handleShareAcknowledge(r)
	}, nil, nil)
	register(90, 0, 1, func(b *Broker, _ *conn, r *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
		return b.handleDescribeShareGroupOffsets(r)
	}, nil, nil)
}

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

// handle runs one request: version checks, injected faults, then the API's handler. A nil
// response with keep true means no response is sent (acks=0 produce); keep false closes the
// connection.
func (b *Broker) handle(cn *conn, req *wire.Request) (resp kmsg.Response, keep bool) {
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
		if act.Delay > 0 && !b.sleep(cn, act.Delay) {
			return nil, false
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

// sleep waits d on the cluster clock; it returns false if the connection or cluster closed first.
func (b *Broker) sleep(cn *conn, d time.Duration) bool {
	ch := make(chan struct{})
	t := b.c.clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return true
	case <-cn.done:
	case <-b.c.closed:
	}
	t.Stop()
	return false
}
