package server

import (
	"context"
	"net/url"

	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/web/templates"
)

// Topic names as pages write them in their websocket URLs.
var (
	topicOverview = live.Overview().String()
	topicAudit    = live.Audit().String()
)

// queueTopic is the websocket topic name of one queue's page.
func queueTopic(id int64) string { return live.Queue(id).String() }

// subscriptionOf is the subscription a page's websocket makes: its topic, link context and view.
func subscriptionOf(topic live.Topic, nav templates.Nav, view url.Values) subscription {
	return subscription{Topic: topic, View: pageView{Nav: nav, Query: view.Encode()}}
}

// hubRender renders the push of a subscription's first rendering: its whole view.
func (s *Server) hubRender(ctx context.Context, sub subscription, changes live.Changes) ([]byte, error) {
	p, err := s.hubPush(ctx, sub, changes, nil)
	return p.Full, err
}
