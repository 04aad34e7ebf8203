package server

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
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

// hubRender renders the push of a subscription's first rendering: its whole view, in messages.
func (s *Server) hubRender(ctx context.Context, sub subscription, changes live.Changes) ([][]byte, error) {
	p, err := s.hubPush(ctx, sub, changes, nil)
	return p.Full, err
}

// parsePush parses a push's messages as htmx-ext-ws does, each on its own (parseFragment), and
// gathers their top-level elements under one template, for the tests to look in.
func parsePush(t *testing.T, msgs [][]byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader("<template></template>"))
	if err != nil {
		t.Fatal(err)
	}
	all := doc.Find("template").First()
	for _, msg := range msgs {
		all.AppendSelection(parseFragment(t, msg).Find("template").First().Children())
	}
	return doc
}

// pushText is a push's messages as text, for failure messages.
func pushText(msgs [][]byte) string { return string(bytes.Join(msgs, []byte("\n"))) }
