package zzprobe

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const base = "http://127.0.0.1:18611"

func TestProbe(t *testing.T) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath("chromium"), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir("/tmp/s3/chr2"), chromedp.WindowSize(1280, 900))
	actx, c1 := chromedp.NewExecAllocator(context.Background(), opts...)
	defer c1()
	ctx, c2 := chromedp.NewContext(actx)
	defer c2()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			mu.Lock()
			logs = append(logs, fmt.Sprint(m.Type, " ", m))
			mu.Unlock()
		}
	}()
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(expr string) string {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(expr, err)
		}
		return v
	}
	shot := func(name string) {
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err == nil {
			os.WriteFile("/tmp/s3/"+name, b, 0o644)
		}
	}
	metric := func() string {
		return ev(`(()=>{const x=new XMLHttpRequest();x.open('GET','/metrics',false);x.send();return x.responseText.split('\n').filter(l=>l.startsWith('toolq_websocket_clients')).join()})()`)
	}
	rows := `[...document.querySelectorAll('tr[id^="queue-row-"] th a')].map(a=>a.textContent).join(',')`
	do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(`tr[id^="queue-row-"]`), chromedp.Sleep(1500*time.Millisecond))
	fmt.Println("ws clients after load:", metric())
	do(chromedp.Click(`th a[href*="sort=name"]`), chromedp.Sleep(1500*time.Millisecond))
	r1 := ev(rows)
	fmt.Println("after sort click:", ev(`document.querySelector('[ws-connect]').getAttribute('ws-connect')+' url='+location.search`), "\n rows:", r1, "\n", metric())
	do(chromedp.Sleep(7 * time.Second))
	r2 := ev(rows)
	fmt.Println("after pushes rows:", r2, r1 == r2)
	do(chromedp.Click(`th a[href*="sort=name"]`), chromedp.Sleep(6*time.Second))
	fmt.Println("desc after pushes:", ev(rows))
	do(chromedp.SendKeys(`#q`, "dlq"), chromedp.Sleep(6*time.Second))
	fmt.Println("filter dlq after pushes:", ev(rows), ev(`document.querySelector('[ws-connect]').getAttribute('ws-connect')`), metric())
	shot("probe_overview_sorted.png")

	do(chromedp.Navigate(base+"/queues/web-search-dlq"), chromedp.WaitVisible(`#redrive-panel`), chromedp.Sleep(1*time.Second))
	fmt.Println("ws clients on dlq page:", metric())
	do(chromedp.WaitVisible(`form.redrive-start fieldset:not([disabled])`), chromedp.SetValue(`#redrive-rate`, "1"), chromedp.Click(`form.redrive-start button[type=submit]`),
		chromedp.WaitVisible(`#redrive-panel .confirm button.danger`))
	shot("probe_confirm.png")
	do(chromedp.Click(`#redrive-panel .confirm button.danger`), chromedp.Sleep(4*time.Second))
	fmt.Println("flash 4s after start:", ev(`document.getElementById('flash').textContent`), "\n progress:", ev(`document.getElementById('redrive-progress').textContent.replace(/\s+/g,' ')`))
	shot("probe_started.png")
	do(chromedp.Click(`#redrive-panel form[action$="/redrive/cancel"] button[type=submit]`), chromedp.Sleep(4*time.Second))
	fmt.Println("flash 4s after cancel:", ev(`document.getElementById('flash').textContent`))
	do(chromedp.Click(`nav.ranges a[href*="range=24h"]`), chromedp.Sleep(2*time.Second))
	fmt.Println("after range click:", ev(`document.querySelector('[ws-connect]').getAttribute('ws-connect')+' n='+document.querySelectorAll('[ws-connect]').length`), metric())
	do(chromedp.Navigate("about:blank"), chromedp.Sleep(1*time.Second))
	mu.Lock()
	fmt.Println("console:\n" + strings.Join(logs, "\n"))
	mu.Unlock()
}
