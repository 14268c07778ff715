package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/dashboard"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// screenshotsEnv names a directory the browser test also writes its screenshots to (docs/ takes
// dashboard.png from there).
const screenshotsEnv = "FLOTILLA_DASHBOARD_SCREENSHOTS"

// chromium finds a Chromium or Chrome binary, "" when none is installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDashboardInBrowser starts the dashboard against a real API server holding a small fleet
// (statuses written as the controller would), loads every view in headless Chromium and checks
// what a person would read there: the matrix cells, the paused rollout step, the cluster page
// with its proposal, the package's revision spread; then changes a status and sees the page
// follow without a reload.
func TestDashboardInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome on PATH): install Debian's chromium package (apt-get install -y chromium) to run the dashboard's browser test")
	}
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := &fleet{t: t, ctx: ctx, c: env.Client, ns: "fleet"}
	f.create()

	r, err := dashboard.Watch(ctx, env.Config, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dashboard.New(r, dashboard.Options{Namespace: f.ns, Interval: time.Second}))
	defer srv.Close()

	b := newBrowser(t, ctx, bin)
	shots := &screenshots{t: t, dirs: []string{t.TempDir()}}
	if d := os.Getenv(screenshotsEnv); d != "" {
		shots.dirs = append(shots.dirs, d)
	}

	// Fleet matrix: every cell is a revision and a health word.
	b.do(chromedp.Navigate(srv.URL + "/#/fleet"))
	b.waitText(`#matrix`, "edge02")
	cells := b.matrix()
	want := map[string]string{
		"edge01 free5gc-upf": "v7 Healthy", "edge02 free5gc-upf": "v7 Healthy", "core01 free5gc-upf": "v6 Healthy",
		"edge01 smf": "v3 Healthy", "edge02 smf": "v3 Degraded", "core01 smf": "v3 Waiting proposed v4",
	}
	for k, v := range want {
		if cells[k] != v {
			t.Errorf("matrix cell %s = %q, want %q", k, cells[k], v)
		}
	}
	if got := b.text(`#matrix tbody tr:nth-child(3) td:nth-child(2)`); !strings.HasSuffix(got, "Degraded") {
		t.Errorf("edge02's health column %q, want Degraded (its smf)", got)
	}
	shots.take(b, "fleet.png")

	// Search and the health filter are the server's: typing narrows the rows.
	b.do(chromedp.SendKeys(chromedp.CSS(`#search`), "core"))
	b.waitRows(1)
	b.eval(`(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()`)
	b.waitRows(3)
	b.do(chromedp.Click(chromedp.CSS(`button.chip.h-Degraded`)))
	b.waitRows(1)
	if got := b.text(`#matrix tbody th`); !strings.HasPrefix(got, "edge02") {
		t.Errorf("Degraded filter shows %q, want edge02", got)
	}
	b.do(chromedp.Click(chromedp.CSS(`button.chip.h-Degraded`)))
	b.waitRows(3)

	// Live: the agent on edge02 reports smf synced; the open page follows without reloading.
	b.eval(`window.stillThisPage = true`)
	f.setSynced("smf-edge02", metav1.ConditionTrue, "Synced")
	b.poll(`(() => { const c = [...document.querySelectorAll('#matrix tbody tr')].find(r => r.querySelector('th').textContent.startsWith('edge02')); return c && c.cells[3].textContent.includes('Healthy') && c.cells[1].textContent.includes('Healthy'); })()`)
	if !run(b, chromedp.Evaluate[bool](`window.stillThisPage === true`)) {
		t.Error("the page reloaded to show the change")
	}

	// Rollouts: upf paused after its second step, with the command that resumes it.
	b.do(chromedp.Click(chromedp.CSS(`a[data-view=rollouts]`)))
	b.waitText(`#set-fleet-upf`, "Step 2 of 3")
	steps := b.texts(`#set-fleet-upf .timeline > li .step-state`)
	if strings.Join(steps, ",") != "Done,Paused: waits for resume,Pending" {
		t.Errorf("upf steps %v, want Done, Paused, Pending", steps)
	}
	upf := b.text(`#set-fleet-upf`)
	for _, s := range []string{"wave=canary", "edge01 done", "edge02 done", "core01 waiting", "flotilla rollout resume upf -n fleet", "Waiting"} {
		if !strings.Contains(upf, s) {
			t.Errorf("upf rollout does not say %q:\n%s", s, upf)
		}
	}
	if smf := b.text(`#set-fleet-smf`); !strings.Contains(smf, "AllAtOnce") || !strings.Contains(smf, "Progressing") {
		t.Errorf("smf set: %s", smf)
	}
	shots.take(b, "rollouts.png")

	// Cluster page: the proposal waiting, its diff, the sync objects and their health.
	b.do(chromedp.Click(chromedp.CSS(`a[data-view=fleet]`)))
	b.waitText(`#matrix`, "core01")
	b.do(chromedp.Click(chromedp.CSS(`#matrix a[href="#/clusters/fleet/core01"]`)))
	b.waitText(`#proposal`, "Proposal v4 waits for approval")
	proposal := b.text(`#proposal`)
	for _, s := range []string{"proposed/deployed-packages/v4", "smf-core01", "smf/v2", "smf/v3", "flotilla approve core01 -n fleet"} {
		if !strings.Contains(proposal, s) {
			t.Errorf("core01's proposal does not say %q:\n%s", s, proposal)
		}
	}
	deployments := b.text(`#deployments`)
	for _, s := range []string{"RootSync config-management-system/upf-core01", "Waiting", "WaitingForApproval"} {
		if !strings.Contains(deployments, s) {
			t.Errorf("core01's deployments do not say %q:\n%s", s, deployments)
		}
	}
	if revs := b.text(`#revisions`); !strings.Contains(revs, "deployed-packages/v3") || !strings.Contains(revs, "free5gc-upf/v6") || !strings.Contains(revs, "deployed-packages/v2") {
		t.Errorf("core01's revisions:\n%s", revs)
	}
	shots.take(b, "cluster.png")

	// Package page: which cluster runs which revision, and the variant downstream of it.
	b.do(chromedp.Click(chromedp.CSS(`a[data-view=packages]`)))
	b.waitText(`#packages`, "free5gc-upf")
	b.do(chromedp.Click(chromedp.CSS(`#packages a[href="#/packages/free5gc-upf"]`)))
	b.waitText(`#spread`, "v7")
	spread := b.texts(`#spread .spread-row > div:first-child`)
	if strings.Join(spread, "|") != "v72 clusters|v61 cluster" {
		t.Errorf("free5gc-upf spread %q, want v7 on 2 clusters, v6 on 1", spread)
	}
	if v := b.text(`#variants`); !strings.Contains(v, "upf-telco") || !strings.Contains(strings.Join(strings.Fields(v), ""), "free5gc-upf/v7→upf-telco/v2") {
		t.Errorf("variants of free5gc-upf:\n%s", v)
	}
	shots.take(b, "package.png")

	// Keyboard: "/" goes to the fleet's search.
	b.eval(`document.activeElement && document.activeElement.blur()`)
	b.do(chromedp.KeyEvent("/"))
	b.waitText(`#matrix`, "edge01")
	if focused := run(b, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "search" {
		t.Errorf("after /, focus on %q, want the search box", focused)
	}
	b.checkConsole()
}

// TestLargeFleetInBrowser loads the matrix of 1,000 clusters × 10 packages: the page holds one
// page of rows whatever the fleet's size, and pages and filters through the server.
func TestLargeFleetInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome on PATH): install Debian's chromium package (apt-get install -y chromium) to run the dashboard's browser test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := httptest.NewServer(dashboard.StaticHandler(dashboard.BigFleet(1000, 10), dashboard.Options{}))
	defer srv.Close()
	b := newBrowser(t, ctx, bin)
	shots := &screenshots{t: t, dirs: []string{t.TempDir()}}
	if d := os.Getenv(screenshotsEnv); d != "" {
		shots.dirs = append(shots.dirs, d)
	}
	b.do(chromedp.Navigate(srv.URL + "/#/fleet?limit=100"))
	b.waitRows(100)
	if got := b.text(`#page-count`); got != "1–100 of 1,000 clusters" {
		t.Errorf("pager says %q", got)
	}
	if got := b.texts(`#matrix thead th`); len(got) != 12 || got[2] != "pkg00" || got[11] != "pkg09" {
		t.Errorf("columns %v, want Cluster, Health and 10 packages", got)
	}
	// One page of rows, whatever the fleet's size: about 60 elements a row.
	if n := run(b, chromedp.Evaluate[int](`document.getElementsByTagName('*').length`)); n > 10000 {
		t.Errorf("the page holds %d elements for 100 rows", n)
	}
	if chips := strings.Join(strings.Fields(b.text(`.chips`)), " "); !strings.Contains(chips, "Degraded 100") || !strings.Contains(chips, "Healthy 900") {
		t.Errorf("health counts %q, want 100 Degraded", chips)
	}
	shots.take(b, "fleet-1000.png")
	b.eval(`document.getElementById('next').click()`)
	b.waitText(`#page-count`, "101–200 of 1,000 clusters")
	b.do(chromedp.KeyEvent("]"))
	b.waitText(`#page-count`, "201–300 of 1,000 clusters")
	b.eval(`(() => { const h = document.getElementById('health'); h.value = 'Degraded'; h.dispatchEvent(new Event('change')); })()`)
	b.waitText(`#page-count`, "of 100 clusters")
	if got := b.text(`#page-count`); got != "1–100 of 100 clusters" {
		t.Errorf("Degraded clusters: pager says %q (a new filter starts at the first page)", got)
	}
	b.checkConsole()
}

// fleet is the test's fleet: three clusters, two sets (upf rolling out v7 in three steps, paused
// after the second; smf at v3 everywhere, AllAtOnce), core01 with a proposal waiting, edge02's
// smf not syncing, and a variant downstream of free5gc-upf/v7.
type fleet struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	ns  string
}

func (f *fleet) create() {
	f.must(f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}))
	type cluster struct {
		name, wave, region string
		manual             bool
	}
	clusters := []cluster{{"edge01", "canary", "eu", false}, {"edge02", "early", "eu", false}, {"core01", "late", "us", true}}
	for _, c := range clusters {
		wc := &v1alpha1.WorkloadCluster{
			ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: f.ns, Labels: map[string]string{"wave": c.wave, "region": c.region}},
			Spec:       v1alpha1.WorkloadClusterSpec{Repository: v1alpha1.LocalObjectReference{Name: c.name}},
		}
		if c.manual {
			wc.Spec.Approval = v1alpha1.ApprovalManual
		}
		f.must(f.c.Create(f.ctx, wc))
		wc.Status = v1alpha1.WorkloadClusterStatus{
			DeployedPackages: &v1alpha1.DeployedPackagesStatus{Revision: 3, Tag: "deployed-packages/v3", Commit: "3a1f0c9e5b7d2468ace013579bdf2468ace01357",
				Packages: []v1alpha1.PublishedPin{{Deployment: "smf-" + c.name, Tag: "smf/v3"}, {Deployment: "upf-" + c.name, Tag: "free5gc-upf/v7"}}},
		}
		f.conditions(&wc.Status.Conditions, wc.Generation, "Ready=True Published", "Healthy=True Synced")
		if c.manual {
			wc.Status.DeployedPackages.Packages = []v1alpha1.PublishedPin{{Deployment: "smf-core01", Tag: "smf/v2"}, {Deployment: "upf-core01", Tag: "free5gc-upf/v6"}}
			wc.Status.Proposal = &v1alpha1.ProposalStatus{Revision: 4, Branch: "proposed/deployed-packages/v4", Commit: "4b2e1d0c9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c",
				Summary: "~smf-core01 smf/v2→smf/v3", Packages: []v1alpha1.PublishedPin{{Deployment: "smf-core01", Tag: "smf/v3"}, {Deployment: "upf-core01", Tag: "free5gc-upf/v6"}}}
			f.conditions(&wc.Status.Conditions, wc.Generation, "Ready=False WaitingForApproval", "Reconciling=True WaitingForApproval")
		}
		f.must(f.c.Status().Update(f.ctx, wc))
	}
	// upf: v7 on the canary and early waves, core01 still at v6.
	for _, c := range clusters {
		rev := 7
		if c.name == "core01" {
			rev = 6
		}
		f.deployment("upf", c.name, "free5gc-upf", rev, 3, "Ready=True Published", "Published=True Published", "Synced=True Synced")
	}
	f.deployment("smf", "edge01", "smf", 3, 3, "Ready=True Published", "Published=True Published", "Synced=True Synced")
	f.deployment("smf", "edge02", "smf", 3, 3, "Ready=True Published", "Published=True Published", "Synced=False SyncError")
	f.deployment("smf", "core01", "smf", 3, 2, "Ready=False WaitingForApproval", "Reconciling=True WaitingForApproval", "Published=False WaitingForApproval")

	wave := func(w string) *v1alpha1.LabelSelector {
		return &v1alpha1.LabelSelector{MatchLabels: map[string]string{"wave": w}}
	}
	upf := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: "upf", Namespace: f.ns},
		Spec: v1alpha1.PackageSetSpec{
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "free5gc-upf", Revision: "v7"},
			Targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}},
			Strategy: v1alpha1.RolloutStrategy{Type: v1alpha1.StrategyRollingUpdate, RollingUpdate: &v1alpha1.RollingUpdate{
				Steps: []v1alpha1.RolloutStep{{Selector: wave("canary")}, {Selector: wave("early"), Pause: true}, {}}}},
		},
	}
	f.must(f.c.Create(f.ctx, upf))
	upf.Status = v1alpha1.PackageSetStatus{Targets: 3, Updated: 2, Ready: 3, Revision: "free5gc-upf/v7",
		Rollout: &v1alpha1.RolloutStatus{Revision: "free5gc-upf/v7", Step: 1, Paused: true,
			Message: "step 2 of 3 is healthy (2 of 3 targets at free5gc-upf/v7): paused; resume with flotilla rollout resume upf"}}
	f.conditions(&upf.Status.Conditions, upf.Generation, "Ready=False RolloutPaused", "Reconciling=True RolloutPaused", "Progressing=False RolloutPaused")
	f.must(f.c.Status().Update(f.ctx, upf))
	smf := &v1alpha1.PackageSet{
		ObjectMeta: metav1.ObjectMeta{Name: "smf", Namespace: f.ns},
		Spec: v1alpha1.PackageSetSpec{
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "smf", Revision: "v3"},
			Targets: v1alpha1.Generator{LeafGenerator: v1alpha1.LeafGenerator{Clusters: &v1alpha1.ClusterGenerator{}}},
		},
	}
	f.must(f.c.Create(f.ctx, smf))
	smf.Status = v1alpha1.PackageSetStatus{Targets: 3, Updated: 3, Ready: 1, Revision: "smf/v3"}
	f.conditions(&smf.Status.Conditions, smf.Generation, "Ready=False Progressing", "Reconciling=True Progressing", "Progressing=True Progressing")
	f.must(f.c.Status().Update(f.ctx, smf))

	pv := &v1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "upf-telco", Namespace: f.ns},
		Spec: v1alpha1.PackageVariantSpec{
			Upstream:   v1alpha1.VariantUpstream{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: "free5gc-upf", Revision: "v7"},
			Downstream: v1alpha1.VariantDownstream{Repository: v1alpha1.LocalObjectReference{Name: "blueprints"}, Package: "upf-telco"},
		},
	}
	f.must(f.c.Create(f.ctx, pv))
	pv.Status = v1alpha1.PackageVariantStatus{
		Upstream:   &v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 7, Tag: "free5gc-upf/v7", Commit: "7c", Directory: "/free5gc-upf"},
		Downstream: &v1alpha1.ResolvedRevision{Repository: "blueprints", Revision: 2, Tag: "upf-telco/v2", Commit: "2d", Directory: "/upf-telco"},
		Lineage:    []v1alpha1.LineageEntry{{Repository: "catalog", Tag: "free5gc-upf/v7", Commit: "7c"}},
	}
	f.conditions(&pv.Status.Conditions, pv.Generation, "Ready=True Published")
	f.must(f.c.Status().Update(f.ctx, pv))
}

// deployment creates set's deployment on cluster, pinning pkg/vRev, first carried by deployed-packages
// revision published, with conditions "Type=Status Reason".
func (f *fleet) deployment(set, cluster, pkg string, rev, published int, conds ...string) {
	pd := &v1alpha1.PackageDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: set + "-" + cluster, Namespace: f.ns, Labels: map[string]string{v1alpha1.LabelPackageSet: set}},
		Spec: v1alpha1.PackageDeploymentSpec{Cluster: v1alpha1.LocalObjectReference{Name: cluster},
			Package: v1alpha1.PackageReference{Repository: &v1alpha1.LocalObjectReference{Name: "catalog"}, Name: pkg, Revision: fmt.Sprintf("v%d", rev)}},
	}
	f.must(f.c.Create(f.ctx, pd))
	pd.Status = v1alpha1.PackageDeploymentStatus{
		ObservedGeneration:       pd.Generation,
		Resolved:                 &v1alpha1.ResolvedRevision{Repository: "catalog", Revision: rev, Tag: fmt.Sprintf("%s/v%d", pkg, rev), Commit: fmt.Sprintf("%040d", rev), Directory: "/" + pkg},
		SyncObject:               &v1alpha1.SyncObjectReference{APIVersion: "configsync.gke.io/v1beta1", Kind: "RootSync", Namespace: "config-management-system", Name: pd.Name},
		DeployedPackagesRevision: published,
	}
	f.conditions(&pd.Status.Conditions, pd.Generation, conds...)
	f.must(f.c.Status().Update(f.ctx, pd))
}

// setSynced writes what the cluster's agent reports for a deployment.
func (f *fleet) setSynced(name string, status metav1.ConditionStatus, reason string) {
	pd := &v1alpha1.PackageDeployment{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, pd))
	f.conditions(&pd.Status.Conditions, pd.Generation, fmt.Sprintf("Synced=%s %s", status, reason))
	f.must(f.c.Status().Update(f.ctx, pd))
}

func (f *fleet) conditions(conds *[]metav1.Condition, gen int64, specs ...string) {
	for _, s := range specs {
		typ, rest, _ := strings.Cut(s, "=")
		status, reason, _ := strings.Cut(rest, " ")
		meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason,
			Message: reason + " (written by the test)", ObservedGeneration: gen})
	}
}

func (f *fleet) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// browser is one headless Chromium tab; it records what the page logs as errors (an exception,
// a refused script or style, a failed request).
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T, parent context.Context, bin string) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // root in a container has no user namespace for the sandbox
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx alone
		t.Fatalf("start %s: %v", bin, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	b.do(chromedp.EmulateViewport(1280, 800))
	return b
}

// do runs actions, each page a minute at most.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v (page errors: %v; the page says: %s)", err, b.pageErrors(), b.banner())
	}
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %v (page errors: %v; the page says: %s)", err, b.pageErrors(), b.banner())
	}
	return v
}

// banner is what the page shows in its error banner, for a failure's message.
func (b *browser) banner() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.getElementById('error'); return e && !e.hidden ? e.textContent : 'no error'; })()`))
	if err != nil {
		return err.Error()
	}
	return s
}

func (b *browser) eval(expr string) {
	b.t.Helper()
	run(b, chromedp.Evaluate[any](expr))
}

// poll waits until the JavaScript expression is true.
func (b *browser) poll(expr string) {
	b.t.Helper()
	run(b, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second)))
}

// waitText waits until the element's text contains s.
func (b *browser) waitText(sel, s string) {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	want, _ := json.Marshal(s)
	b.poll(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()`, q, want))
}

// waitRows waits until the fleet matrix shows n rows.
func (b *browser) waitRows(n int) {
	b.t.Helper()
	b.poll(fmt.Sprintf(`document.querySelectorAll('#matrix tbody tr').length === %d`, n))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(run(b, chromedp.Text(chromedp.CSS(sel))))
}

func (b *browser) texts(sel string) []string {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	return run(b, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%s)].map(e => e.textContent.trim())`, q)))
}

// matrix reads the fleet matrix as "cluster package" → the cell's words.
func (b *browser) matrix() map[string]string {
	b.t.Helper()
	return run(b, chromedp.Evaluate[map[string]string](`(() => {
		const cols = [...document.querySelectorAll('#matrix thead th')].map(th => th.textContent.trim());
		const out = {};
		for (const tr of document.querySelectorAll('#matrix tbody tr')) {
			const cluster = tr.querySelector('th a').textContent.trim();
			[...tr.cells].forEach((td, i) => { if (i > 1) out[cluster + ' ' + cols[i]] = [...td.querySelectorAll('.cell > span')].map(s => s.textContent.replace(/[^\x20-\x7e]/g, '').trim()).join(' '); });
		}
		return out;
	})()`))
}

func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

func (b *browser) checkConsole() {
	b.t.Helper()
	for _, e := range b.pageErrors() {
		b.t.Errorf("the page logged an error: %s", e)
	}
}

type screenshots struct {
	t    *testing.T
	dirs []string
}

func (s *screenshots) take(b *browser, name string) {
	s.t.Helper()
	png := run(b, chromedp.CaptureScreenshot())
	for _, d := range s.dirs {
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	s.t.Logf("screenshot %s (%d KB) in %v", name, len(png)/1024, s.dirs)
}
