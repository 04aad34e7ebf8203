package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/web/static"
)

// pageRoutes registers the browser pages, the static files and the websocket. Every page route
// is here, in one list; each handler lives in the pages_*.go file of its resource.
func (s *Server) pageRoutes(e *echo.Echo) {
	e.GET(static.Prefix+"*", echo.WrapHandler(static.Handler()))
	e.GET("/", s.overviewPage)
	e.GET("/audit", s.auditPage)
	e.GET("/archive", s.wholeArchivePage)
	e.GET("/status", s.statusPage)
	e.POST("/status/notifications/test", s.testNotificationPage)
	e.GET("/login", s.loginPage)
	e.GET("/ws", s.serveWebsocket)
	e.GET("/queues/:queue", s.queuePage)
	e.GET("/queues/:queue/messages", s.messagesPage)
	e.GET("/queues/:queue/messages.json", s.exportMessagesJSON)
	e.GET("/queues/:queue/messages.csv", s.exportMessagesCSV)
	e.GET("/queues/:queue/messages/:messageId", s.messagePage)
	e.GET("/queues/:queue/redrive", s.redrivePanel)
	e.GET("/queues/:queue/redrives/:redriveId", s.redriveDetailPage)
	e.POST("/queues/:queue/redrive", s.startRedrivePage)
	e.POST("/queues/:queue/redrive/cancel", s.cancelRedrivePage)
	e.POST("/queues/:queue/redrive/selection", s.selectionPage)
	e.POST("/queues/:queue/discard/selection", s.discardPage)
	e.GET("/queues/:queue/archive", s.queueArchivePage)
	e.GET("/queues/:queue/archive.json", s.exportArchiveJSON)
	e.GET("/queues/:queue/archive.csv", s.exportArchiveCSV)
	e.GET("/queues/:queue/archive.jsonl", s.exportArchiveJSONL)
	e.GET("/queues/:queue/archive/:messageId", s.archivedMessagePage)
	e.POST("/queues/:queue/archive/restore", s.restorePage)
	e.GET("/embed-theme.css", s.embedThemeCSS)
	e.GET("/favicon.ico", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
}
