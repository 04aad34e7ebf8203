// Package depsguard keeps go.mod's requirements in place while the packages that use them are
// being written. It is removed once every dependency has a real importer.
package depsguard

import (
	_ "github.com/PuerkitoBio/goquery"
	_ "github.com/a-h/templ"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/credentials"
	_ "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	_ "github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "github.com/aws/smithy-go/encoding/cbor"
	_ "github.com/chromedp/chromedp"
	_ "github.com/gorilla/websocket"
	_ "github.com/labstack/echo/v4"
	_ "github.com/pressly/goose/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/sivchari/kumo"
	_ "golang.org/x/time/rate"
	_ "modernc.org/sqlite"
)
