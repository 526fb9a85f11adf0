package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
)

// browser starts a headless Debian chromium for the test and returns its
// context; the console messages of the page are collected from the start.
func browser(t *testing.T) (context.Context, func() []chromedp.ConsoleMessage) {
	t.Helper()
	exe := testenv.Binary(t, "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses its sandbox to root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	cctx, stopConsole := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		msgs []chromedp.ConsoleMessage
		done = make(chan struct{})
	)
	seq := chromedp.Console(cctx) // subscribes now: nothing the page writes is lost
	go func() {                   // owned by the test: ends with stopConsole
		defer close(done)
		for m, err := range seq {
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stopConsole()
		<-done
		cancelTab()
		cancelAlloc()
	})
	return ctx, func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		return append([]chromedp.ConsoleMessage(nil), msgs...)
	}
}

// waitToken waits until the page's card of lock shows token, without
// reloading the page.
func waitToken(t *testing.T, ctx context.Context, lock string, token uint64) {
	t.Helper()
	const shown = `(name, tok) => {
		const card = [...document.querySelectorAll('section.lock')].find((c) => c.dataset.lock === name);
		const el = card && card.querySelector('.token');
		return !!el && el.dataset.token === tok && el.textContent === tok;
	}`
	want := strconv.FormatUint(token, 10)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := chromedp.Run(ctx, chromedp.PollFunction[bool](shown,
			chromedp.WithPollingArgs(lock, want), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		// A document the page replaced while the poll ran (the login's
		// redirect settling) takes the poll's context with it: poll the
		// new one.
		if !strings.Contains(err.Error(), "Cannot find context") || time.Now().After(deadline) {
			t.Fatalf("the page did not show token %s for %q: %v", want, lock, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestExporterBrowser opens the live page in chromium at a phone's width:
// it shows the holder's token, and after a release the next holder's
// larger token, without a reload; it shows who holds (host, pid,
// program), a lock name written by another client as text, has no
// console error and no horizontal scroll at 375px.
func TestExporterBrowser(t *testing.T) {
	c, url := redisLocks(t)
	base := "demo-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	deploy, backup := base+"/billing/export", base+"/search/<b>reindex</b>"
	lock := func(name string) *baton.Lease {
		m, err := c.Mutex(name)
		if err != nil {
			t.Fatalf("Mutex(%q) = %v", name, err)
		}
		l, err := m.Lock(t.Context())
		if err != nil {
			t.Fatalf("Lock(%q) = %v", name, err)
		}
		return l
	}
	first := lock(deploy)
	held := lock(backup)
	t.Cleanup(func() { _ = held.Release(context.Background()) })
	next := herd(t, 1, func() (baton.Locker, error) { return c.Mutex(deploy) })
	herd(t, 2, func() (baton.Locker, error) { return c.Mutex(backup) })
	page, _, _ := startExporter(t, url, deploy, backup)

	ctx, console := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812), chromedp.Navigate(page+"/")); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	waitToken(t, ctx, deploy, first.Token())
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument = true`)); err != nil {
		t.Fatalf("mark the document: %v", err)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	var second *baton.Lease
	select {
	case second = <-next:
		t.Cleanup(func() { _ = second.Release(context.Background()) })
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not granted within 20s of the release")
	}
	if second.Token() <= first.Token() {
		t.Fatalf("next token %d <= first %d", second.Token(), first.Token())
	}
	waitToken(t, ctx, deploy, second.Token())
	waitToken(t, ctx, backup, held.Token())

	check := func(what, expr string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil || !ok {
			t.Errorf("%s: %s = %v, %v", what, expr, ok, err)
		}
	}
	check("the page was not reloaded", `window.sameDocument === true`)
	check("no horizontal scroll at 375px", `document.documentElement.scrollWidth <= window.innerWidth`)
	check("the lock name is text, not markup", `[...document.querySelectorAll('section.lock h2')].some(
		(h) => h.firstChild.nodeValue === `+strconv.Quote(backup)+`) && document.querySelector('section.lock b') === null`)
	check("two waiters listed in order", `[...document.querySelectorAll('section.lock')].find(
		(c) => c.dataset.lock === `+strconv.Quote(backup)+`).querySelectorAll('ol.queue li').length === 2`)
	// The holder is this test's process: its host, pid and program show
	// on the holder's card.
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	card := `[...document.querySelectorAll('section.lock')].find((c) => c.dataset.lock === ` + strconv.Quote(backup) + `)`
	check("the holder's host", card+`.querySelector('dl.holder .host').textContent === `+strconv.Quote(host))
	check("the holder's pid", card+`.querySelector('dl.holder .pid').textContent === `+strconv.Quote(strconv.Itoa(os.Getpid())))
	check("the holder's program", card+`.querySelector('dl.holder .program').textContent === `+strconv.Quote(filepath.Base(os.Args[0])))

	finishPage(ctx, t, console, "exporter.png")
}

// finishPage saves a screenshot of the page as name (in BATON_ARTIFACTS,
// else the test's temporary directory) and fails the test on every console
// error or exception the page logged.
func finishPage(ctx context.Context, t *testing.T, console func() []chromedp.ConsoleMessage, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("BATON_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, name)
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatalf("save the screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)
	for _, m := range console() {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			t.Errorf("console: %v (%s:%d)", m, m.URL, m.Line)
		}
	}
}

// waitPath waits until the page is a loaded document at path, across the
// navigations a script makes (an evaluation may fail while one runs).
func waitPath(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`document.readyState === 'complete' && location.pathname === `+strconv.Quote(path)))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not reach %s within 20s (%v)", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestExporterBrowserToken: with --token-file the page sends chromium to
// the login page; /login#token=TOKEN logs in, takes the token out of the
// address, and the page then shows the holder's token and, through its
// event stream, the next holder's, with a session cookie no script can
// read.
func TestExporterBrowserToken(t *testing.T) {
	c, url := redisLocks(t)
	name := lockName(t)
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	first, err := m.Lock(t.Context())
	if err != nil {
		t.Fatalf("Lock(%q) = %v", name, err)
	}
	next := herd(t, 1, func() (baton.Locker, error) { return c.Mutex(name) })
	page, _, _ := startExporter(t, url, "--token-file", writeToken(t, testToken, 0o600), name)

	ctx, console := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(page+"/")); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	waitPath(t, ctx, "/login")
	// A new document, as when the address is opened: from /login itself
	// only the fragment would change.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(page+"/login#token="+testToken)); err != nil {
		t.Fatalf("open the login: %v", err)
	}
	waitPath(t, ctx, "/")
	waitToken(t, ctx, name, first.Token())
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
		`!location.href.includes(`+strconv.Quote(testToken)+`) && !document.cookie.includes('baton_session')`))
	if err != nil || !ok {
		t.Errorf("after the login the address holds the token or a script reads the session cookie: %v, %v", ok, err)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	select {
	case second := <-next:
		t.Cleanup(func() { _ = second.Release(context.Background()) })
		waitToken(t, ctx, name, second.Token())
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not granted within 20s of the release")
	}
	finishPage(ctx, t, console, "exporter-login.png")
}
