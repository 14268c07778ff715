// flotilla dashboard: a read-only view of the JSON API beside it. Every piece of data reaches the
// page as text (textContent, attributes), never as HTML.
'use strict';

const HEALTH = {
  Healthy: '✓', Progressing: '↻', Waiting: '‖', Degraded: '✕', Unknown: '?', Suspended: '⊘',
};
const HEALTHS = ['Degraded', 'Waiting', 'Progressing', 'Unknown', 'Suspended', 'Healthy'];
const STEP = { Done: '✓', Current: '↻', Paused: '‖', Halted: '✕', Pending: '·' };
const STEP_TEXT = {
  Done: 'Done', Current: 'In progress', Paused: 'Paused: waits for resume', Halted: 'Halted', Pending: 'Pending',
};
const TARGET_TEXT = { Done: 'done', Moving: 'moving', Waiting: 'waiting', Failed: 'failed', RolledBack: 'rolled back' };

const state = {
  interval: 5000, paused: false, timer: 0, etag: '', url: '', route: null, view: '', lastOK: 0, namespace: '',
};

// h builds an element: h('a', {href: '#', class: 'x'}, 'text', child...). Strings become text.
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function badge(status, prefix) {
  const health = (status && status.health) || 'Unknown';
  const why = status && status.reason ? status.reason + (status.message ? ': ' + status.message : '') : '';
  return h('span', { class: 'badge h-' + health, title: why || undefined },
    h('span', { class: 'icon', 'aria-hidden': 'true' }, HEALTH[health] || '?'), (prefix || '') + health);
}

function reasonLine(status) {
  if (!status || !status.reason) return null;
  return h('span', { class: 'muted' }, status.reason + (status.message ? ': ' + status.message : ''));
}

function clusterHref(ns, name) {
  return '#/clusters/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name);
}

function packageHref(name, ns) {
  return '#/packages/' + name.split('/').map(encodeURIComponent).join('/') + (ns ? '?namespace=' + encodeURIComponent(ns) : '');
}

function num(n) { return Number(n || 0).toLocaleString('en'); }

function short(commit) { return commit ? commit.replace(/^sha256:/, '').slice(0, 12) : ''; }

function command(text) {
  const code = h('code', {}, text);
  const btn = h('button', {
    type: 'button',
    onclick: () => {
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(() => { btn.textContent = 'Copied'; }, () => {});
    },
  }, 'Copy');
  return h('div', { class: 'command' }, h('span', { class: 'muted' }, 'Run:'), code, btn);
}

// ---- routing ----

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { view: parts[0] || 'fleet', parts: parts.slice(1), params: new URLSearchParams(query || '') };
}

function setParams(params) {
  const q = params.toString();
  history.replaceState(null, '', '#/' + state.route.view + (q ? '?' + q : ''));
  state.route = parseRoute();
}

const VIEWS = {
  fleet: { url: fleetURL, render: renderFleet, enter: enterFleet, title: 'Fleet' },
  rollouts: { url: (r) => '/api/sets' + nsQuery(r), render: renderRollouts, title: 'Rollouts' },
  clusters: {
    url: (r) => '/api/clusters/' + encodeURIComponent(r.parts[0] || '') + '/' + encodeURIComponent(r.parts[1] || ''),
    render: renderCluster, title: 'Cluster',
  },
  packages: {
    url: (r) => (r.parts.length ? '/api/packages/' + r.parts.map(encodeURIComponent).join('/') : '/api/packages') + nsQuery(r),
    render: (d, r, out) => (r.parts.length ? renderPackage(d, r, out) : renderPackages(d, r, out)), title: 'Packages',
  },
};

function nsQuery(r) {
  const ns = r.params.get('namespace');
  return ns ? '?namespace=' + encodeURIComponent(ns) : '';
}

function route() {
  state.route = parseRoute();
  const view = VIEWS[state.route.view] ? state.route.view : 'fleet';
  for (const a of document.querySelectorAll('.top nav a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = document.getElementById('main');
  main.replaceChildren();
  state.view = view;
  state.etag = '';
  const v = VIEWS[view];
  document.title = v.title + ' · flotilla';
  if (v.enter) v.enter(main, state.route);
  main.append(h('div', { id: 'content' }, h('p', { class: 'muted' }, 'Loading…')));
  load();
}

// ---- live updates ----

async function load() {
  clearTimeout(state.timer);
  const v = VIEWS[state.view];
  const url = v.url(state.route);
  const changed = url !== state.url;
  state.url = url;
  try {
    const resp = await fetch(url, { headers: changed || !state.etag ? {} : { 'If-None-Match': state.etag } });
    if (url !== state.url) return; // the page moved on meanwhile
    if (resp.status === 304) {
      ok();
    } else {
      const data = await resp.json();
      if (!resp.ok) throw new Error(data.error || resp.statusText);
      const etag = resp.headers.get('ETag') || '';
      if (changed || etag !== state.etag || !etag) {
        const content = document.getElementById('content');
        const fresh = h('div', { id: 'content' });
        v.render(data, state.route, fresh);
        content.replaceWith(fresh);
        state.etag = etag; // only once drawn: a view that failed to draw is drawn again
      }
      ok();
    }
  } catch (err) {
    showError(String(err.message || err));
  }
  schedule();
}

function schedule() {
  clearTimeout(state.timer);
  if (!state.paused && !document.hidden) state.timer = setTimeout(load, state.interval);
}

function ok() {
  state.lastOK = Date.now();
  const banner = document.getElementById('error');
  banner.hidden = true;
  const live = document.getElementById('live');
  live.classList.remove('stale');
  live.textContent = (state.namespace ? 'namespace ' + state.namespace + ' · ' : '') + (state.paused ? 'Paused · ' : 'Live · ') + 'updated ' + new Date().toLocaleTimeString();
}

function showError(msg) {
  const banner = document.getElementById('error');
  banner.textContent = 'Cannot read the fleet: ' + msg;
  banner.hidden = false;
  document.getElementById('live').classList.add('stale');
}

function togglePause() {
  state.paused = !state.paused;
  const b = document.getElementById('pause');
  b.setAttribute('aria-pressed', String(state.paused));
  b.textContent = state.paused ? 'Resume updates' : 'Pause updates';
  if (state.paused) {
    clearTimeout(state.timer);
    document.getElementById('live').textContent = 'Paused';
  } else {
    load();
  }
}

// ---- fleet matrix ----

function fleetURL(r) {
  const q = new URLSearchParams();
  for (const k of ['namespace', 'selector', 'health', 'q', 'offset', 'limit']) {
    const v = r.params.get(k);
    if (v) q.set(k, v);
  }
  return '/api/fleet' + (q.toString() ? '?' + q : '');
}

function enterFleet(main, r) {
  const p = r.params;
  const debounce = (fn) => {
    let t = 0;
    return () => { clearTimeout(t); t = setTimeout(fn, 250); };
  };
  const apply = () => {
    const q = new URLSearchParams();
    const set = (k, v) => { if (v) q.set(k, v); };
    set('q', search.value.trim());
    set('namespace', ns.value);
    set('selector', selector.value.trim());
    set('health', health.value);
    if (limit.value !== '50') set('limit', limit.value);
    setParams(q);
    load();
  };
  const search = h('input', { type: 'search', id: 'search', placeholder: 'cluster, package, revision, label', value: p.get('q') || '', oninput: debounce(apply) });
  const ns = h('select', { id: 'namespace', onchange: apply }, h('option', { value: '' }, 'All namespaces'));
  if (p.get('namespace')) ns.append(h('option', { value: p.get('namespace'), selected: true }, p.get('namespace')));
  const selector = h('input', { type: 'text', id: 'selector', placeholder: 'region=eu,tier!=canary', value: p.get('selector') || '', oninput: debounce(apply), spellcheck: 'false' });
  const health = h('select', { id: 'health', onchange: apply }, h('option', { value: '' }, 'Any health'),
    HEALTHS.map((x) => h('option', { value: x, selected: p.get('health') === x }, HEALTH[x] + ' ' + x)));
  const limit = h('select', { id: 'limit', onchange: apply },
    ['25', '50', '100', '200'].map((x) => h('option', { value: x, selected: (p.get('limit') || '50') === x }, x + ' per page')));
  main.append(
    h('h1', {}, 'Fleet'),
    h('p', { class: 'muted' }, 'Every cluster × package: the revision each deployment pins and how it is doing.'),
    h('div', { class: 'filters', role: 'search' },
      h('label', {}, 'Search', search),
      h('label', {}, 'Namespace', ns),
      h('label', {}, 'Label selector', selector),
      h('label', {}, 'Health', health),
      h('label', {}, 'Rows', limit)),
  );
}

function renderFleet(d, r, out) {
  // Keep the namespace list current without touching the user's choice.
  const ns = document.getElementById('namespace');
  if (ns) {
    const chosen = ns.value;
    ns.replaceChildren(h('option', { value: '' }, 'All namespaces'),
      d.namespaces.map((x) => h('option', { value: x, selected: x === chosen }, x)));
  }
  const health = r.params.get('health') || '';
  const chips = h('div', { class: 'chips', role: 'group', 'aria-label': 'Clusters by health (click to filter)' },
    HEALTHS.filter((x) => d.counts[x]).map((x) => h('button', {
      type: 'button', class: 'chip h-' + x, 'aria-pressed': String(health === x),
      onclick: () => {
        const sel = document.getElementById('health');
        sel.value = health === x ? '' : x;
        sel.dispatchEvent(new Event('change'));
      },
    }, h('span', { 'aria-hidden': 'true' }, HEALTH[x]), x, h('span', { class: 'n' }, num(d.counts[x])))));
  out.append(chips);
  if (!d.rows.length) {
    out.append(h('div', { class: 'panel' }, h('p', {}, d.total === 0 && !r.params.toString() ? 'No WorkloadClusters yet.' : 'No cluster matches the filters.')));
    return;
  }
  const head = h('tr', {}, h('th', { scope: 'col' }, 'Cluster'), h('th', { scope: 'col' }, 'Health'),
    d.packages.map((p) => h('th', { scope: 'col' }, h('a', { href: packageHref(p) }, p))));
  const rows = d.rows.map((row) => h('tr', {},
    h('th', { scope: 'row' },
      h('a', { href: clusterHref(row.namespace, row.name) }, row.name), ' ', h('span', { class: 'ns' }, row.namespace),
      row.proposal ? h('div', { class: 'sub muted' }, 'proposal v' + row.proposal + ' waits') : null),
    h('td', { class: 'health' }, badge(row.status)),
    d.packages.map((p) => h('td', {}, cells(row.cells[p]))),
  ));
  out.append(h('div', { class: 'table-wrap' },
    h('table', { class: 'matrix', id: 'matrix' },
      h('caption', { class: 'sr-only' }, 'Clusters by package: pinned revision and health'),
      h('thead', {}, head), h('tbody', {}, rows))));
  out.append(pager(d));
}

function cells(list) {
  if (!list || !list.length) return h('span', { class: 'none' }, h('span', { 'aria-hidden': 'true' }, '—'), h('span', { class: 'sr-only' }, 'not deployed'));
  return list.map((c) => h('div', {
    class: 'cell h-' + c.status.health,
    title: c.deployment + (c.tag ? ' · ' + c.tag : '') + (c.status.reason ? ' · ' + c.status.reason + (c.status.message ? ': ' + c.status.message : '') : ''),
  },
  h('span', { class: 'rev' }, c.pinned),
  h('span', { class: 'what' }, h('span', { 'aria-hidden': 'true' }, HEALTH[c.status.health] + ' '), c.status.health),
  list.length > 1 ? h('span', { class: 'sub' }, c.deployment) : null,
  c.published.startsWith('proposed') ? h('span', { class: 'sub' }, c.published) : null));
}

function pager(d) {
  const from = d.total ? d.offset + 1 : 0;
  const to = Math.min(d.offset + d.limit, d.total);
  const go = (offset) => {
    const p = new URLSearchParams(state.route.params);
    if (offset > 0) p.set('offset', String(offset)); else p.delete('offset');
    setParams(p);
    load();
  };
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', id: 'prev', disabled: d.offset <= 0, onclick: () => go(Math.max(d.offset - d.limit, 0)) }, '‹ Previous'),
    h('span', { class: 'count', id: 'page-count' }, num(from) + '–' + num(to) + ' of ' + num(d.total) + ' clusters'),
    h('button', { type: 'button', id: 'next', disabled: to >= d.total, onclick: () => go(d.offset + d.limit) }, 'Next ›'));
}

function page(delta) {
  if (state.view !== 'fleet') return;
  const btn = document.getElementById(delta > 0 ? 'next' : 'prev');
  if (btn && !btn.disabled) btn.click();
}

// ---- rollouts ----

function renderRollouts(d, r, out) {
  out.append(h('h1', {}, 'Rollouts'),
    h('p', { class: 'muted' }, 'Each PackageSet: its steps, which targets are done, moving, waiting or failed, and why. Resume, undo and approve stay commands.'));
  if (!d.sets.length) {
    out.append(h('div', { class: 'panel' }, h('p', {}, 'No PackageSets.')));
    return;
  }
  for (const s of d.sets) out.append(setPanel(s));
}

function setPanel(s) {
  const panel = h('section', { class: 'panel set', id: 'set-' + s.namespace + '-' + s.name, 'aria-labelledby': 'set-title-' + s.namespace + '-' + s.name });
  panel.append(h('div', { class: 'set-head' },
    h('h2', { id: 'set-title-' + s.namespace + '-' + s.name }, s.name, ' ', h('span', { class: 'ns' }, s.namespace)),
    badge(s.status)),
  h('div', { class: 'facts' },
    h('span', {}, 'package ', h('a', { href: packageHref(s.package, s.namespace) }, s.package), ' @ ', h('b', {}, s.revision)),
    h('span', {}, 'strategy ', h('b', {}, s.strategy)),
    h('span', {}, h('b', {}, num(s.targets)), ' targets · ', h('b', {}, num(s.updated)), ' updated · ', h('b', {}, num(s.ready)), ' ready'
      , s.failed ? [' · ', h('b', {}, num(s.failed)), ' with problems'] : null)));
  const ro = s.rollout;
  if (ro) {
    panel.append(h('div', { class: 'facts' }, ro.revision ? h('span', {}, 'rolling out ', h('b', {}, ro.revision)) : h('span', {}, 'not started'),
      ro.undeployed ? h('span', {}, num(ro.undeployed) + ' targets not deployed yet (in no step until the rollout reaches them)') : null));
    panel.append(timeline(s, ro));
    if (ro.message) panel.append(h('p', { class: 'message' }, ro.message));
    for (const c of ro.commands || []) panel.append(command(c));
    if (ro.rolledBack && ro.rolledBack.length) {
      panel.append(h('h3', {}, 'Rolled back'), h('ul', {}, ro.rolledBack.map((b) => h('li', {}, b.target + ': ' + b.from + ' → ' + b.to))));
    }
  } else if (s.status.message) {
    panel.append(h('p', { class: 'message' }, s.status.message));
  }
  if (s.promotion) {
    panel.append(h('p', { class: 'message' }, 'Promoted from ', h('b', {}, s.promotion.from), ' at ' + s.promotion.revision,
      s.promotion.message ? ': ' + s.promotion.message : ''));
  }
  if (s.problems && s.problems.length) {
    panel.append(h('h3', {}, 'Problems'), h('ul', { class: 'problems' }, s.problems.map((p) => h('li', {}, h('b', {}, p.target), ': ', p.message))));
  }
  return panel;
}

function timeline(s, ro) {
  return h('ol', { class: 'timeline', 'aria-label': 'Steps of ' + s.name },
    ro.steps.map((st, i) => {
      const counts = Object.entries(st.counts).map(([k, n]) => num(n) + ' ' + (TARGET_TEXT[k] || k));
      const shown = st.targets.length;
      const total = Object.values(st.counts).reduce((a, b) => a + b, 0);
      return h('li', { class: 'step', 'data-state': st.state, 'aria-current': st.state === 'Current' || st.state === 'Paused' || st.state === 'Halted' ? 'step' : undefined },
        h('div', { class: 'node' },
          h('span', { class: 'dot s-' + st.state, 'aria-hidden': 'true' }, STEP[st.state] || '·'),
          i < ro.steps.length - 1 ? h('span', { class: 'bar' + (st.state === 'Done' ? ' done' : '') }) : null),
        h('div', { class: 'step-title' }, 'Step ' + (i + 1) + ' of ' + ro.steps.length),
        h('div', { class: 'step-state c-' + st.state }, STEP_TEXT[st.state] || st.state),
        h('div', { class: 'muted' }, st.selects + ' · maxUnavailable ' + st.maxUnavailable + (st.pause ? ' · pause after' : '')),
        h('div', { class: 'muted' }, counts.length ? counts.join(' · ') : 'no targets'),
        h('div', { class: 'targets' }, st.targets.map((t) => h('a', {
          class: 'target t-' + t.state, href: clusterHref(s.namespace, t.cluster),
          title: t.deployment + (t.current ? ' runs ' + t.current : '') + ' · ' + t.health,
        }, t.cluster + ' ' + (TARGET_TEXT[t.state] || t.state))),
        shown < total ? h('span', { class: 'muted' }, '+' + num(total - shown) + ' more') : null));
    }));
}

// ---- cluster page ----

function renderCluster(d, r, out) {
  const c = d.cluster;
  out.append(h('div', { class: 'crumbs' }, h('a', { href: '#/fleet' }, 'Fleet'), ' / ', c.namespace, ' / ', c.name),
    h('h1', {}, c.name, badge(c.status)),
    h('div', { class: 'facts' },
      h('span', {}, 'namespace ', h('b', {}, c.namespace)),
      h('span', {}, 'engine ', h('b', {}, c.engine)),
      h('span', {}, 'approval ', h('b', {}, c.approval)),
      c.suspend ? h('span', {}, h('b', {}, 'suspended')) : null,
      c.deployedPackages ? h('span', {}, 'deployed-packages ', h('b', {}, c.deployedPackages.tag), ' ', h('code', {}, short(c.deployedPackages.commit))) : h('span', {}, 'nothing published yet'),
      d.sets.length ? h('span', {}, 'sets ', d.sets.map((s, i) => [i ? ', ' : '', h('a', { href: '#/rollouts?namespace=' + encodeURIComponent(c.namespace) }, s)])) : null),
    c.labels ? h('div', { class: 'labels', 'aria-label': 'Labels' }, Object.entries(c.labels).map(([k, v]) => h('span', { class: 'label' }, k + '=' + v))) : null);
  if (c.own && c.own.reason && c.own.health !== 'Healthy') out.append(h('p', { class: 'message' }, reasonLine(c.own)));

  if (d.problems.length) {
    out.append(h('section', { class: 'panel', id: 'problems' }, h('h2', {}, 'Problems'),
      h('ul', { class: 'problems' }, d.problems.map((p) => h('li', {}, h('b', {}, p.object), ' ', h('code', {}, p.reason), ' ', p.message)))));
  }
  if (c.proposal) out.append(proposal(c));

  const deployments = h('section', { class: 'panel', id: 'deployments' }, h('h2', {}, 'Deployments and sync objects'));
  if (!c.deployments.length) deployments.append(h('p', { class: 'muted' }, 'No PackageDeployment on this cluster.'));
  else {
    deployments.append(h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Deployment', 'Package', 'Wants', 'Pinned', 'Deployed-packages', 'Sync object', 'Health'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, c.deployments.map((x) => h('tr', {},
        h('th', { scope: 'row' }, x.name, x.set ? h('div', { class: 'ns' }, 'set ' + x.set) : null),
        h('td', {}, h('a', { href: packageHref(x.package, c.namespace) }, x.package), x.lineage ? h('div', { class: 'ns' }, x.lineage.join(' ← ')) : null,
          x.blueprint ? h('div', { class: 'ns' }, 'from ' + x.blueprint) : null),
        h('td', { class: 'mono' }, x.wants),
        h('td', { class: 'mono' }, x.resolved ? x.resolved.tag : x.pinned),
        h('td', { class: 'mono' }, x.published),
        h('td', {}, x.syncObject ? x.syncObject.kind + ' ' + x.syncObject.namespace + '/' + x.syncObject.name : '—'),
        h('td', {}, badge(x.status), h('div', {}, reasonLine(x.status)))))))));
  }
  out.append(deployments);

  const hist = h('section', { class: 'panel', id: 'revisions' }, h('h2', {}, 'Deployed-packages revisions'),
    h('p', { class: 'muted' }, 'The revisions that brought in the pins this cluster carries now, from status. Replaced and removed pins are in the git history of the cluster repository, which the dashboard does not read.'));
  if (!d.revisions.length) hist.append(h('p', {}, 'Nothing published yet.'));
  else {
    hist.append(h('ol', { class: 'history' }, d.revisions.map((rev) => h('li', { class: rev.current ? 'current' : undefined },
      h('b', {}, rev.tag || 'v' + rev.revision), rev.current ? h('span', { class: 'muted' }, ' (published now)') : null,
      h('ul', {}, rev.pins.length ? rev.pins.map((p) => h('li', {}, h('span', { class: 'op op-add' }, '+'), ' ' + p.deployment + ' ', h('code', {}, p.tag)))
        : h('li', { class: 'muted' }, 'no pin it carries now'))))));
  }
  out.append(hist);

  out.append(h('section', { class: 'panel', id: 'conditions' }, h('h2', {}, 'Conditions'), conditions(c.conditions)));
}

function proposal(c) {
  const p = c.proposal;
  const op = { '+': ['op-add', 'added'], '-': ['op-remove', 'removed'], '~': ['op-change', 'changed'] };
  return h('section', { class: 'panel', id: 'proposal' },
    h('h2', {}, 'Proposal v' + p.revision + ' waits for approval'),
    h('dl', { class: 'kv' },
      h('dt', {}, 'Branch'), h('dd', {}, h('code', {}, p.branch)),
      h('dt', {}, 'Commit'), h('dd', {}, h('code', {}, p.commit)),
      p.summary ? [h('dt', {}, 'Summary'), h('dd', {}, p.summary)] : null),
    h('h3', {}, 'Changes from ' + (c.deployedPackages ? c.deployedPackages.tag : 'nothing published')),
    p.changes.length ? h('table', { class: 'diff' },
      h('thead', {}, h('tr', {}, ['', 'Deployment', 'From', 'To'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, p.changes.map((ch) => h('tr', {},
        h('td', {}, h('span', { class: 'op ' + op[ch.op][0] }, ch.op), h('span', { class: 'sr-only' }, op[ch.op][1])),
        h('th', { scope: 'row' }, ch.deployment),
        h('td', { class: 'mono' }, ch.from || '—'),
        h('td', { class: 'mono' }, ch.to || '—'))))) : h('p', { class: 'muted' }, 'no pin changes'),
    command(p.command));
}

function conditions(list) {
  if (!list || !list.length) return h('p', { class: 'muted' }, 'No conditions yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message'].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, list.map((x) => h('tr', {}, h('th', { scope: 'row' }, x.type), h('td', {}, x.status), h('td', {}, h('code', {}, x.reason)), h('td', {}, x.message || '')))));
}

// ---- packages ----

function renderPackages(d, r, out) {
  out.append(h('h1', {}, 'Packages'), h('p', { class: 'muted' }, 'Every package deployed, the revisions it runs at, and how its deployments are doing.'));
  if (!d.packages.length) {
    out.append(h('div', { class: 'panel' }, h('p', {}, 'No PackageDeployments.')));
    return;
  }
  out.append(h('div', { class: 'table-wrap' }, h('table', { id: 'packages' },
    h('thead', {}, h('tr', {}, ['Package', 'Clusters', 'Revisions', 'Health'].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, d.packages.map((p) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: packageHref(p.name, r.params.get('namespace')) }, p.name)),
      h('td', {}, num(p.clusters)),
      h('td', { class: 'mono' }, p.revisions.join(', ')),
      h('td', {}, h('div', { class: 'labels' }, HEALTHS.filter((x) => p.counts[x]).map((x) => badge({ health: x }, num(p.counts[x]) + ' '))))))))));
}

function renderPackage(d, r, out) {
  out.append(h('div', { class: 'crumbs' }, h('a', { href: '#/packages' }, 'Packages'), ' / ', d.name), h('h1', {}, d.name));
  const spread = h('section', { class: 'panel', id: 'spread' }, h('h2', {}, 'Revision spread'));
  const total = d.spread.reduce((a, s) => a + s.count, 0);
  if (!d.spread.length) spread.append(h('p', { class: 'muted' }, 'Not deployed.'));
  for (const s of d.spread) {
    const stack = h('div', { class: 'stack', 'aria-hidden': 'true' });
    for (const x of HEALTHS) {
      if (!s.counts[x]) continue;
      const seg = h('span', { class: 'h-' + x, title: x + ': ' + s.counts[x] });
      seg.style.width = (100 * s.counts[x] / s.count) + '%';
      stack.append(seg);
    }
    const bar = h('div', { class: 'stack-wrap' }, stack);
    bar.firstChild.style.width = Math.max(4, 100 * s.count / total) + '%';
    spread.append(h('div', { class: 'spread-row', 'data-revision': s.revision },
      h('div', {}, h('b', { class: 'mono' }, s.revision), s.blueprint ? h('div', { class: 'ns' }, 'blueprint revision') : null,
        h('div', { class: 'muted' }, num(s.count) + (s.count === 1 ? ' cluster' : ' clusters'))),
      h('div', {}, bar,
        h('div', { class: 'labels' }, HEALTHS.filter((x) => s.counts[x]).map((x) => badge({ health: x }, num(s.counts[x]) + ' '))),
        h('div', { class: 'targets' }, s.clusters.map((c) => h('a', { class: 'target t-' + targetClass(c.status.health), href: clusterHref(c.namespace, c.cluster), title: c.deployment + (c.tag ? ' · ' + c.tag : '') + ' · ' + c.status.health }, c.cluster + ' ' + c.status.health)),
          s.clusters.length < s.count ? h('span', { class: 'muted' }, '+' + num(s.count - s.clusters.length) + ' more') : null))));
  }
  out.append(spread);
  const variants = h('section', { class: 'panel', id: 'variants' }, h('h2', {}, 'Variants and lineage'));
  if (!d.variants.length) variants.append(h('p', { class: 'muted' }, 'No PackageVariant publishes or takes this package.'));
  else {
    variants.append(h('table', {},
      h('thead', {}, h('tr', {}, ['Variant', 'Upstream', 'Lineage (root first)', 'Downstream', 'Health'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, d.variants.map((v) => h('tr', {},
        h('th', { scope: 'row' }, v.name, ' ', h('span', { class: 'ns' }, v.namespace)),
        h('td', {}, v.upstream),
        h('td', {}, lineage(v)),
        h('td', { class: 'mono' }, v.downstream ? v.downstream.tag : '—', v.proposal ? h('div', { class: 'ns' }, 'proposal v' + v.proposal.revision + ' waits') : null),
        h('td', {}, badge(v.status), h('div', {}, reasonLine(v.status))))))));
  }
  out.append(variants);
  if (d.sets.length) {
    out.append(h('section', { class: 'panel', id: 'package-sets' }, h('h2', {}, 'PackageSets'),
      h('ul', {}, d.sets.map((s) => h('li', {}, h('a', { href: '#/rollouts' + (s.namespace ? '?namespace=' + encodeURIComponent(s.namespace) : '') }, s.name), ' ', h('span', { class: 'ns' }, s.namespace), ' @ ' + s.revision + ' ', badge(s.status))))));
  }
}

function targetClass(health) {
  return { Healthy: 'Done', Progressing: 'Moving', Degraded: 'Failed', Waiting: 'RolledBack' }[health] || 'Waiting';
}

function lineage(v) {
  const tags = (v.lineage || []).map((e) => e.tag);
  if (v.downstream) tags.push(v.downstream.tag);
  if (!tags.length) return h('span', { class: 'muted' }, '—');
  const out = h('span', { class: 'lineage' });
  tags.forEach((t, i) => {
    if (i) out.append(h('span', { class: 'arrow', 'aria-label': 'then' }, '→'));
    out.append(h('code', {}, t));
  });
  return out;
}

// ---- keyboard ----

function onKey(e) {
  const help = document.getElementById('help');
  if (e.target.closest && e.target.closest('input, select, textarea')) {
    if (e.key === 'Escape') e.target.blur();
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const go = (hash) => { location.hash = hash; };
  switch (e.key) {
    case '/': {
      if (state.view !== 'fleet') go('#/fleet');
      setTimeout(() => { const s = document.getElementById('search'); if (s) s.focus(); }, 0);
      break;
    }
    case 'f': go('#/fleet'); break;
    case 'r': go('#/rollouts'); break;
    case 'p': go('#/packages'); break;
    case '[': page(-1); break;
    case ']': page(1); break;
    case ' ': if (e.target === document.body || e.target.id === 'main') togglePause(); else return; break;
    case '?': if (!help.open) help.showModal(); break;
    default: return;
  }
  e.preventDefault();
}

async function start() {
  try {
    const cfg = await (await fetch('/api/config')).json();
    state.interval = Math.max(1, cfg.intervalSeconds || 5) * 1000;
    state.namespace = cfg.namespace || '';
  } catch (err) {
    showError(String(err.message || err));
  }
  document.getElementById('pause').addEventListener('click', togglePause);
  document.getElementById('help-button').addEventListener('click', () => document.getElementById('help').showModal());
  document.getElementById('help-close').addEventListener('click', () => document.getElementById('help').close());
  document.addEventListener('keydown', onKey);
  document.addEventListener('visibilitychange', () => { if (!document.hidden && !state.paused) load(); });
  window.addEventListener('hashchange', route);
  route();
}

start();
