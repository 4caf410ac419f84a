/* page.js: builds a `gpuleak html` page from the reports cli/html.c
 * embedded in it (each a <script type="application/json"
 * class="gpuleak-report"> holding {"file", "report"}; the report's fields:
 * docs/report-format.md). Glue only: uPlot draws the timelines,
 * d3-flame-graph the stacks, and the tables are paged here so that a
 * report of 100,000 sites shows 50 rows at a time.
 *
 * A report is untrusted (a file name or function name may hold markup), so
 * its text reaches the page only as textContent and attribute values, never
 * as HTML. The loader already checked the fields the other commands read;
 * every other field is read through num/str/arr/obj, which take a missing
 * or mistyped value as absent.
 *
 * What the page computes (peak, sums, the flame graphs' totals) is also
 * written into data-* attributes of each panel, where the page test reads
 * them back and compares them with the report. */
"use strict";

(function () {
  const KINDS = ["device", "pool", "vmm", "managed", "host", "array", "tensor"];
  /* common/report_format.h's phrases, so the page names a kind as every
   * other view does. */
  const KIND_PHRASE = {
    device: "device memory", pool: "stream-ordered pool memory", vmm: "VMM physical memory",
    managed: "managed memory", host: "pinned host memory", array: "CUDA array memory",
    tensor: "tensor memory",
  };
  /* common/report_format.h's frameworks: what a tensor site's memory is,
   * and what the framework's unused pool is called. */
  const FRAMEWORKS = {
    torch: ["PyTorch tensor memory", "PyTorch's cache"], jax: ["JAX array memory", "JAX's pool"],
    cupy: ["CuPy array memory", "CuPy's pool"],
  };
  /* A site's memory as every view names it (report_site_phrase). */
  function sitePhrase(r) {
    if (r.kind === "tensor") return (FRAMEWORKS[r.framework] || FRAMEWORKS.torch)[0];
    return KIND_PHRASE[r.kind] || r.kind;
  }
  /* A composition part's phrase where the tensors are the arrays of the
   * report's "frameworks" (composition_role_phrase_for). */
  function rolePhrase(role, phrase, frameworks) {
    const names = Object.keys(frameworks || {}).filter((n) => FRAMEWORKS[n]);
    const torchAlone = names.length === 0 || (names.length === 1 && names[0] === "torch");
    if (role === "torch_cache") {
      if (names.length === 1) return FRAMEWORKS[names[0]][1];
      return names.length === 0 ? phrase : "the frameworks' caches";
    }
    return role === "outside_torch" && !torchAlone ? "outside the frameworks' pools" : phrase;
  }
  /* common/composition.h's roles and phrases, in its order, so the page
   * names a part as every other view does. */
  const ROLES = [["parameters", "parameters", "#1c7ed6"], ["gradients", "gradients", "#74c0fc"],
    ["untrained_gradients", "gradients no optimizer steps", "#a5d8ff"],
    ["optimizer_state", "optimizer state", "#7048e8"], ["buffers", "buffers", "#b197fc"],
    ["saved_for_backward", "saved for backward", "#e03131"],
    ["activations", "made in a module's forward", "#ff8787"], ["other_tensors", "other tensors", "#f08c00"],
    ["unnamed_tensors", "tensors no object was found for", "#ffd43b"], ["torch_cache", "PyTorch's cache", "#adb5bd"],
    ["outside_torch", "outside PyTorch's allocator", "#495057"]];
  const KIND_COLOR = {
    device: "#d9480f", pool: "#2f9e44", vmm: "#7048e8", managed: "#1098ad",
    host: "#868e96", array: "#e8590c", tensor: "#c2255c",
  };
  /* report/frames.c's list: a stack's innermost frame outside these is
   * where a site without an "origin" is shown from. */
  const LIBRARY_MODULES = [/^libcuda\.so/, /^libcudart/, /^libcublas/, /^libcudnn/, /^libnccl/, /^libc10/,
    /^libtorch/, /^libc\.so/, /^libstdc\+\+/, /^ld-linux/, /^libpython/, /^python3/];
  const PAGE_ROWS = 50;
  /* Frames under this share of a flame graph's whole are merged: at any
   * width a screen shows they would be under a pixel, and merging keeps a
   * graph of 100,000 stacks to a few thousand frames. */
  const FLAME_MIN_SHARE = 1 / 2000;
  const DETAIL_SITES = 20;

  const num = (v) => (typeof v === "number" && isFinite(v) ? v : 0);
  const str = (v) => (typeof v === "string" ? v : null);
  const arr = (v) => (Array.isArray(v) ? v : []);
  const obj = (v) => (v !== null && typeof v === "object" && !Array.isArray(v) ? v : null);

  /* units.c's units_format_size: "123 B", "4.0 KiB", "1.5 GiB". */
  function fmtBytes(b) {
    const names = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let v = num(b), unit = 0;
    while (v >= 1024 && unit < 6) { v /= 1024; unit++; }
    if (unit === 0) return `${num(b)} B`;
    /* printf's "%.1f" rounds an exact half to even (1.25 MiB is "1.2 MiB"),
     * toFixed up: the page must print what the text views print. */
    const twentieths = BigInt(Math.round(num(b))) * 20n, scale = 1024n ** BigInt(unit);
    let rounded = v;
    if (twentieths % scale === 0n && (twentieths / scale) % 2n === 1n) {
      const tenths = Number((twentieths / scale - 1n) / 2n);  /* the exact half's floor */
      rounded = (tenths % 2 === 0 ? tenths : tenths + 1) / 10;
    }
    return `${rounded.toFixed(1)} ${names[unit]}`;
  }
  /* 1234567 -> "1,234,567" (toLocaleString is ten times slower, which
   * shows when a table of 100,000 rows is filtered). */
  const fmtInt = (n) => {
    const v = num(n);
    return Number.isInteger(v) ? String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ",") : String(v);
  };
  function fmtSeconds(s) {
    if (!isFinite(s)) return "?";
    if (s === 0) return "0 s";
    if (Math.abs(s) >= 100) return `${s.toFixed(0)} s`;
    if (Math.abs(s) >= 1) return `${s.toFixed(2)} s`;
    return `${(s * 1000).toFixed(s * 1000 >= 10 ? 1 : 3)} ms`;
  }
  function basename(p) {
    if (typeof p !== "string") return "?";
    return p.slice(p.lastIndexOf("/") + 1);
  }

  /* el("td", {className: "num", title: "..."}, "text", child...) */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === "dataset") Object.assign(node.dataset, v);
      else if (k in node) node[k] = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }
  function fromTemplate(id) {
    return document.getElementById(id).content.firstElementChild.cloneNode(true);
  }
  const slot = (root, name) => root.querySelector(`[data-slot="${name}"]`);

  /* ---------- frames and sites, as report/frames.c shows them ---------- */

  function pyPlace(f) {
    return `${str(f.function) ?? "??"} in ${str(f.file) ?? "??"}:${num(f.line)} (Python)`;
  }
  function nativePlace(f) {
    let t = str(f.function) ?? "??";
    if (str(f.file) !== null) t += ` ${f.file}` + (num(f.line) > 0 ? `:${f.line}` : "");
    return `${t} (${basename(str(f.module))}+${str(f.offset) ?? "0x0"})`;
  }
  const shortFrame = (f) => `${str(f.function) ?? "??"} ${basename(str(f.file))}:${num(f.line)}`;
  function isLibrary(f) {
    const base = basename(str(f.module));
    return LIBRARY_MODULES.some((re) => re.test(base));
  }

  /* A "cut" entry's list, by its path in the document, as the panel's rows
   * name it. */
  const CUT_ROWS = {
    leaks: "leaks", kept_by_libraries: "kept_by_libraries", reachable_at_exit: "reachable_at_exit",
    teardown_leaks: "teardown_leaks", failures: "failures", sites: "sites", growth: "growth",
    "growth.sites": "growth", peak: "peak", "peak.sites": "peak", held_at_finish: "held",
    "held_at_finish.sites": "held",
  };

  class Report {
    /* cut: what the page has not read yet of a big report's lists
     * (cli/html.c writes the largest sites first): {PATH: {sites, bytes,
     * allocations}}, the list's whole length and the rest's sums; null once
     * the report is whole. elsewhere: the report is a summary on a page of
     * many (its largest sites, no stacks or timeline), whose rest stays in
     * its file. */
    constructor(index, file, doc, cut = null, elsewhere = false) {
      this.index = index;
      this.file = file;
      this.doc = doc;
      this.cut = {};
      for (const [path, c] of Object.entries(obj(cut) || {}))
        if (CUT_ROWS[path] && obj(c)) this.cut[CUT_ROWS[path]] = { sites: num(c.sites), bytes: num(c.bytes), allocations: num(c.allocations) };
      this.elsewhere = elsewhere;
      this.partial = !elsewhere && Object.keys(this.cut).length > 0;
      const p = obj(doc.process) || {};
      this.pid = p.pid;
      this.rank = typeof p.rank === "number" ? p.rank : null;
      this.host = str(p.host);
      this.frames = arr(doc.frames);
      this.pyFrames = arr(doc.python_frames);
      this.stackTable = obj(doc.stacks) || {};
      this.idOf = new Map(); /* native frame object -> its name id (nameId) */
      this.pyIdOf = new Map();
      this.nameIds = new Map(); /* "n" or "p" + name -> id */
      this.nameList = []; /* id -> {name, py} */
    }

    get label() {
      const who = this.rank !== null ? `rank ${this.rank}` : `pid ${this.pid}`;
      return `${basename(this.file)} (${who})`;
    }

    get title() {
      const parts = [this.file];
      if (this.rank !== null) parts.push(`rank ${this.rank}`);
      parts.push(`pid ${this.pid}` + (this.host ? ` on ${this.host}` : ""));
      return parts.join(" · ");
    }

    /* A site entry's frames, innermost first: inline in a version 1
     * report, else from the stacks table by site id. */
    stackOf(entry) {
      if (Array.isArray(entry.stack) || Array.isArray(entry.python_stack))
        return { py: arr(entry.python_stack).filter(obj), native: arr(entry.stack).filter(obj) };
      const st = obj(this.stackTable[String(entry.site)]);
      if (!st) return { py: [], native: [] };
      return {
        py: arr(st.python_stack).map((i) => this.pyFrames[i]).filter(obj),
        native: arr(st.stack).map((i) => this.frames[i]).filter(obj),
      };
    }

    /* frames_origin: the shim's origin with its callers, via and owner,
     * else the innermost Python frame, else the innermost native frame
     * outside the runtimes. */
    originText(entry) {
      const o = obj(entry.origin);
      if (o) {
        let t = o.python === true ? pyPlace(o) : nativePlace(o);
        for (const c of arr(o.callers).filter(obj)) t += `, from ${shortFrame(c)}`;
        if (obj(o.via)) t += `, via ${shortFrame(o.via)}`;
        const owner = str(entry.owner);
        if (owner && owner !== "user") t += ` [${owner}]`;
        return t;
      }
      const st = this.stackOf(entry);
      if (st.py.length) return pyPlace(st.py[0]);
      const user = st.native.find((f) => !isLibrary(f)) || st.native[0];
      if (user) return nativePlace(user);
      return `site ${num(entry.site)} (no stack recorded)`;
    }

    /* frames_origin_line: the key that sites from one line share. */
    originLine(entry) {
      const o = obj(entry.origin);
      let key;
      if (!o) key = `site ${num(entry.site)}`;
      else if (o.python === true || str(o.file) !== null) key = `${str(o.file) ?? "?"}:${num(o.line)}`;
      else key = `${str(o.module) ?? "?"}+${str(o.offset) ?? "0x0"}`;
      if (o) for (const c of arr(o.callers).filter(obj)) key += `<${str(c.file) ?? "?"}:${num(c.line)}`;
      return key;
    }

    /* A frame's name in the flame graphs, as `gpuleak export --format
     * folded` writes it. */
    static frameName(f, python) {
      return python ? `${str(f.function) ?? "??"} (${basename(str(f.file))}:${num(f.line)})`
        : str(f.function) ?? `${basename(str(f.module))}+${str(f.offset) ?? "0x0"}`;
    }

    /* Flame graph names as small integers: equal names share one, so that
     * the frames of a graph merge by name (as flamegraph.pl merges them)
     * while a tree of 100,000 stacks is built with integer keys. In a
     * version 2 report each frame of the tables gets its id once. */
    nameId(f, python) {
      const ids = python ? this.pyIdOf : this.idOf;
      let id = ids.get(f);
      if (id === undefined) {
        id = this.internName(Report.frameName(f, python), python);
        ids.set(f, id);
      }
      return id;
    }

    internName(name, python) {
      const key = (python ? "p" : "n") + name;
      let id = this.nameIds.get(key);
      if (id === undefined) {
        id = this.nameList.length;
        this.nameList.push({ name, py: python });
        this.nameIds.set(key, id);
      }
      return id;
    }

    /* The name ids of a site's frames, outermost first: Python frames, then
     * native ones, as `gpuleak export --format folded` orders them; an
     * array kept per site of the stack table (a site is in several
     * measures: leaked, peak, held). */
    flameIdsOf(entry) {
      const cached = this.flameCache && this.flameCache.get(entry.site);
      if (cached !== undefined) return cached;
      const ids = [];
      ids.length = this.flameIds(entry, ids);
      if (!Array.isArray(entry.stack) && !Array.isArray(entry.python_stack)) {
        if (!this.flameCache) this.flameCache = new Map();
        this.flameCache.set(entry.site, ids);
      }
      return ids;
    }

    /* flameIdsOf's ids into out, returning the count. */
    flameIds(entry, out) {
      let n = 0;
      if (Array.isArray(entry.stack) || Array.isArray(entry.python_stack)) {
        const py = arr(entry.python_stack), nat = arr(entry.stack);
        for (let i = py.length - 1; i >= 0; i--) if (obj(py[i])) out[n++] = this.nameId(py[i], true);
        for (let i = nat.length - 1; i >= 0; i--) if (obj(nat[i])) out[n++] = this.nameId(nat[i], false);
        return n;
      }
      const st = this.stackTable[String(entry.site)];
      if (!obj(st)) return 0;
      if (!this.pyTableIds) {
        this.pyTableIds = this.pyFrames.map((f) => (obj(f) ? this.nameId(f, true) : -1));
        this.tableIds = this.frames.map((f) => (obj(f) ? this.nameId(f, false) : -1));
      }
      const py = arr(st.python_stack), nat = arr(st.stack);
      for (let i = py.length - 1; i >= 0; i--) {
        const id = this.pyTableIds[py[i]];
        if (id !== undefined && id >= 0) out[n++] = id;
      }
      for (let i = nat.length - 1; i >= 0; i--) {
        const id = this.tableIds[nat[i]];
        if (id !== undefined && id >= 0) out[n++] = id;
      }
      return n;
    }
  }

  /* report_holder_phrase (common/report_format.h). */
  function holderPhrase(h) {
    const name = str(h.name) ?? "?", type = str(h.type) ?? "?";
    const file = (str(h.file) ?? "?") + (str(h.path) ? `; reached as ${h.path}` : "");
    if (h.graph === true) return `the autograd graph of ${name} (in ${file})`;
    if (str(h.owner)) return `${name} (${type}, attribute of a ${h.owner}, in ${file})`;
    return `${name} (${type} in ${file})`;
  }
  function holdersText(holders, more) {
    if (!holders.length) return "";
    const shown = holders.slice(0, 2).map((h) => `${holderPhrase(h)}: ${fmtBytes(h.bytes)}`);
    const rest = holders.length - shown.length + num(more);
    return shown.join("; ") + (rest > 0 ? `; and ${rest} more` : "");
  }

  /* One table row for a site entry of any section; the origin text is made
   * when first shown, sorted or filtered by, not for every row at load. */
  class SiteRow {
    constructor(report, entry) {
      this.report = report;
      this.entry = entry;
      this.site = num(entry.site);
      this.kind = str(entry.kind) ?? "?";
      this.framework = str(entry.framework);
      this.device = typeof entry.device === "number" ? entry.device : null;
      this.bytes = num(entry.bytes);
      this.allocations = num(entry.allocations !== undefined ? entry.allocations : entry.count);
      this.holders = arr(entry.held_by).filter(obj);
      this.holdersMore = num(entry.held_by_more);
      this._origin = null;
      this._held = null;
    }
    get origin() { return this._origin ?? (this._origin = this.report.originText(this.entry)); }
    get held() { return this._held ?? (this._held = holdersText(this.holders, this.holdersMore)); }
    get owner() { return str(this.entry.owner) ?? ""; }
    sites() { return [this]; }
  }

  /* ------------------------------- tables ------------------------------- */

  /* A sortable, filterable table that draws one page of rows at a time.
   * columns: {label, value(row) -> number|string, type: "bytes"|"int"|
   * "num"|"text"|"pct", format?(value, row), wrap?: long text}. onSelect(row) fills the
   * detail area under the table when a row is clicked. */
  class Table {
    /* total: the rows the list has, those the page has not read yet
     * included (a big report's rest). */
    constructor(parent, { title, about, columns, rows, total = rows.length, sortBy = 0, onSelect }) {
      this.root = fromTemplate("table-template");
      parent.append(this.root);
      slot(this.root, "title").textContent = total > rows.length
        ? `${title} (the ${fmtInt(rows.length)} largest of ${fmtInt(total)})` : `${title} (${fmtInt(rows.length)})`;
      slot(this.root, "about").textContent = about || "";
      this.columns = columns;
      this.textColumns = columns.filter((c) => c.type === "text");
      this.all = rows.slice();
      this.view = this.all;
      this.page = 0;
      this.sortBy = sortBy;
      this.desc = columns[sortBy].type !== "text";
      this.terms = [];
      this.onSelect = onSelect;
      this.texts = null;
      this.head = slot(this.root, "head");
      this.body = slot(this.root, "body");
      columns.forEach((c, i) => {
        const th = el("th", { className: c.type === "text" ? "" : "num", scope: "col", title: "Sort" }, c.label);
        th.addEventListener("click", () => this.sort(i));
        this.head.append(th);
      });
      let timer = null;
      slot(this.root, "filter").addEventListener("input", (e) => {
        clearTimeout(timer);
        timer = setTimeout(() => this.filter(e.target.value), 150);
      });
      for (const b of this.root.querySelectorAll("[data-action]"))
        b.addEventListener("click", () => this.turn(b.dataset.action));
      this.body.addEventListener("click", (e) => {
        const tr = e.target.closest("tr");
        if (!tr || !this.onSelect) return;
        for (const old of this.body.querySelectorAll('tr[aria-selected="true"]')) old.removeAttribute("aria-selected");
        tr.setAttribute("aria-selected", "true");
        const detail = slot(this.root, "detail");
        detail.replaceChildren();
        this.onSelect(this.view[Number(tr.dataset.row)], detail);
        detail.hidden = !detail.childElementCount;
      });
      if (!rows.length) {
        /* Nothing to sort, filter or page through. */
        this.root.querySelector(".controls").hidden = true;
        this.root.querySelector(".scroll").hidden = true;
        return;
      }
      this.applySort();
      this.render();
    }

    sort(i) {
      if (this.sortBy === i) this.desc = !this.desc;
      else { this.sortBy = i; this.desc = this.columns[i].type !== "text"; }
      this.applySort();
      this.applyFilter();
      this.page = 0;
      this.render();
    }

    applySort() {
      const value = this.columns[this.sortBy].value;
      const keyed = this.all.map((row) => [value(row), row]);
      const dir = this.desc ? -1 : 1;
      keyed.sort((a, b) => (a[0] < b[0] ? -dir : a[0] > b[0] ? dir : 0));
      this.all = keyed.map((k) => k[1]);
      this.view = this.all;
      this.head.querySelectorAll("th").forEach((th, i) => {
        if (i === this.sortBy) th.setAttribute("aria-sort", this.desc ? "descending" : "ascending");
        else th.removeAttribute("aria-sort");
      });
    }

    filter(text) {
      this.terms = text.toLowerCase().split(/\s+/).filter(Boolean);
      this.applyFilter();
      this.page = 0;
      this.render();
    }

    /* Keeps the rows whose text columns (kind, origin, holders...) hold
     * every term; a row's text is made once, at the first filter. */
    applyFilter() {
      if (!this.terms.length) { this.view = this.all; return; }
      if (!this.texts) this.texts = new Map();
      const text = (row) => {
        let t = this.texts.get(row);
        if (t === undefined) {
          t = this.textColumns.map((c) => this.cellText(c, row)).join("\u0000").toLowerCase();
          this.texts.set(row, t);
        }
        return t;
      };
      this.view = this.all.filter((row) => this.terms.every((term) => text(row).includes(term)));
    }

    cellText(c, row) {
      const v = c.value(row);
      if (c.format) return c.format(v, row);
      switch (c.type) {
        case "bytes": return fmtBytes(v);
        case "int": return fmtInt(v);
        case "pct": return `${(v * 100).toFixed(1)}%`;
        case "num": return typeof v === "number" ? (Number.isInteger(v) ? fmtInt(v) : v.toFixed(3)) : "";
        default: return v === null || v === undefined ? "" : String(v);
      }
    }

    turn(action) {
      const pages = Math.max(1, Math.ceil(this.view.length / PAGE_ROWS));
      if (action === "first") this.page = 0;
      else if (action === "prev") this.page = Math.max(0, this.page - 1);
      else if (action === "next") this.page = Math.min(pages - 1, this.page + 1);
      else if (action === "last") this.page = pages - 1;
      this.render();
    }

    render() {
      const start = this.page * PAGE_ROWS;
      const rows = this.view.slice(start, start + PAGE_ROWS);
      const trs = rows.map((row, i) => {
        const tr = el("tr", { dataset: { row: String(start + i) } });
        for (const c of this.columns) {
          const td = el("td", { className: c.type !== "text" ? "num" : c.wrap ? "text wrap" : "text" }, this.cellText(c, row));
          if (c.type === "bytes") td.title = `${fmtInt(c.value(row))} bytes`;
          tr.append(td);
        }
        return tr;
      });
      this.body.replaceChildren(...trs);
      const n = this.view.length;
      const shown = n ? `${fmtInt(start + 1)}–${fmtInt(start + rows.length)} of ${fmtInt(n)}` : "no rows";
      slot(this.root, "count").textContent = shown + (n !== this.all.length ? ` (filtered from ${fmtInt(this.all.length)})` : "");
      const last = start + PAGE_ROWS >= n;
      for (const b of this.root.querySelectorAll("[data-action]"))
        b.disabled = (b.dataset.action === "first" || b.dataset.action === "prev") ? this.page === 0 : last;
    }
  }

  /* The columns every site table shares after its own. */
  function siteColumns(rows) {
    const cols = [
      { label: "kind", type: "text", value: (r) => (r.kind === "tensor" && r.framework && r.framework !== "torch"
        ? `tensor (${r.framework})` : r.kind) },
      { label: "device", type: "num", value: (r) => (r.device === null ? -1 : r.device), format: (v) => (v < 0 ? "" : String(v)) },
      { label: "origin", type: "text", wrap: true, value: (r) => r.origin },
    ];
    if (rows.some((r) => r.holders.length))
      cols.push({ label: "held by (at Python's finish)", type: "text", wrap: true, value: (r) => r.held });
    return cols;
  }

  /* The detail of a row: for each of its sites, the origin, who held it and
   * the whole stack, Python frames first (report/frames.c's order). */
  function showSites(row, detail) {
    const sites = row.sites();
    for (const r of sites.slice(0, DETAIL_SITES)) {
      detail.append(el("h4", {}, `Site ${r.site}: ${fmtBytes(r.bytes)} of ${sitePhrase(r)}` +
        (r.device !== null && r.kind !== "host" ? ` on device ${r.device}` : "") + ` at ${r.origin}`));
      if (r.holders.length) {
        const ul = el("ul");
        for (const h of r.holders)
          ul.append(el("li", {}, `held by ${holderPhrase(h)}: ${fmtBytes(h.bytes)} in ${fmtInt(h.allocations)} allocation(s)`));
        if (r.holdersMore) ul.append(el("li", {}, `... and ${fmtInt(r.holdersMore)} more holder(s)`));
        detail.append(ul);
      }
      const st = r.report.stackOf(r.entry);
      const ol = el("ol");
      let i = 0;
      for (const f of st.py) ol.append(el("li", { className: "py" }, `#${i++} ${pyPlace(f)}`));
      for (const f of st.native) ol.append(el("li", {}, `#${i++} ${str(f.address) ?? "0x0"} in ${nativePlace(f)}`));
      if (!i) ol.append(el("li", {}, r.report.elsewhere ? `(stacks are left out of this page: \`gpuleak html ${r.report.file}\` shows them)`
        : "(no stack recorded)"));
      detail.append(ol);
    }
    if (sites.length > DETAIL_SITES) detail.append(el("p", { className: "hint" }, `... and ${sites.length - DETAIL_SITES} more site(s)`));
  }

  /* held_at_finish's sites by origin line, as the exit summary and `gpuleak
   * check` group them: bytes summed, holders merged. */
  class LineRow {
    constructor(report, rows) {
      this.rows = rows.slice().sort((a, b) => b.bytes - a.bytes);
      this.report = report;
      this.bytes = rows.reduce((s, r) => s + r.bytes, 0);
      this.allocations = rows.reduce((s, r) => s + r.allocations, 0);
      this.kinds = [...new Set(rows.map((r) => r.kind))].join(", ");
      this.grew = rows.some((r) => r.entry.grew === true);
      const merged = new Map();
      let more = 0;
      for (const r of rows) {
        more += r.holdersMore;
        for (const h of r.holders) {
          const key = [h.name, h.type, h.owner, h.file, h.graph].join("\u0000");
          const m = merged.get(key) || Object.assign({}, h, { bytes: 0, allocations: 0 });
          m.bytes += num(h.bytes);
          m.allocations += num(h.allocations);
          merged.set(key, m);
        }
      }
      this.holders = [...merged.values()].sort((a, b) => b.bytes - a.bytes);
      this.held = holdersText(this.holders, more);
      this.origin = this.rows[0].origin;
    }
    sites() { return this.rows; }
  }

  /* --------------------------- timeline charts -------------------------- */

  /* A bytes axis whose ticks fall on powers of two (1, 2, 4 MiB...), which
   * units_format_size's one decimal shows exactly. */
  const BINARY_STEPS = Array.from({ length: 63 }, (_, i) => 2 ** i);
  function sizeAxis() {
    return { values: (u, ticks) => ticks.map(fmtBytes), size: 80, incrs: BINARY_STEPS };
  }
  /* The time axis in s, ms or µs, whichever the range shown reads best in. */
  function timeAxis() {
    return {
      space: 60,
      values: (u, ticks) => {
        const span = u.scales.x.max - u.scales.x.min;
        const [mult, unit] = span >= 2 ? [1, "s"] : span >= 0.002 ? [1e3, "ms"] : [1e6, "µs"];
        return ticks.map((t) => `${+(t * mult).toFixed(6)} ${unit}`);
      },
    };
  }

  /* The timeline's points as uPlot columns; t_ns are offsets from
   * timeline.start_ns, or absolute times in older reports (made offsets,
   * as report/load.c does). max_bytes is the exact high within a sample,
   * never below bytes. Epoch times read as doubles are exact to 256 ns,
   * far finer than a sample; byte counts are exact below 2^53 (8 PiB). */
  function timelineOf(doc) {
    const tl = obj(doc.timeline);
    const points = arr(tl && tl.points).filter(obj);
    const start = num(tl && tl.start_ns);
    const t0 = points.length && start > 0 && num(points[0].t_ns) >= start ? start : 0;
    const xs = [], live = [], high = [], kinds = {};
    for (const k of KINDS) kinds[k] = [];
    for (const p of points) {
      xs.push((num(p.t_ns) - t0) / 1e9);
      live.push(num(p.bytes));
      high.push(Math.max(num(p.max_bytes), num(p.bytes)));
      const pk = obj(p.kinds) || {};
      for (const k of KINDS) kinds[k].push(typeof pk[k] === "number" ? pk[k] : null);
    }
    /* The program's marks (gpuleak_mark, the pytest plugin's tests): t_ns
     * offsets from the start, as the points' are. */
    const marks = arr(tl && tl.marks).filter(obj).filter((m) => typeof m.name === "string")
      .map((m) => ({ x: num(m.t_ns) / 1e9, name: m.name }));
    return { start, xs, live, high, kinds, marks };
  }

  /* Draws the program's marks as thin grey lines named at the top; a uPlot
   * plugin, so they move with the zoom. Names are drawn on a canvas, never
   * parsed as HTML. */
  function markLines(marks) {
    return {
      hooks: {
        draw: [(u) => {
          const { min, max } = u.scales.x;
          const ctx = u.ctx, r = devicePixelRatio;
          ctx.save();
          ctx.strokeStyle = "#8a8f98";
          ctx.fillStyle = "#5b616b";
          ctx.lineWidth = r;
          ctx.font = `${10 * r}px system-ui, sans-serif`;
          ctx.textBaseline = "top";
          let lastLabel = -Infinity;
          for (const m of marks) {
            if (m.x < min || m.x > max) continue;
            const x = u.valToPos(m.x, "x", true);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            /* A name only where it does not run into the one before. */
            if (x - lastLabel > 80 * r) {
              ctx.fillText(m.name.slice(0, 40), x + 2 * r, u.bbox.top + 2 * r);
              lastLabel = x;
            }
          }
          ctx.restore();
        }],
      },
    };
  }

  /* Draws the exact peak (the report's, not a sample's) as a dot and a
   * dashed line on the chart; a uPlot plugin, so it moves with the zoom. */
  function peakMarker(peak) {
    return {
      hooks: {
        draw: [(u) => {
          if (peak === null) return;
          const { min, max } = u.scales.x;
          if (peak.x < min || peak.x > max) return;
          const x = u.valToPos(peak.x, "x", true), y = u.valToPos(peak.bytes, "y", true);
          const ctx = u.ctx, r = devicePixelRatio;
          ctx.save();
          ctx.strokeStyle = "#a3141d";
          ctx.fillStyle = "#a3141d";
          ctx.lineWidth = r;
          ctx.setLineDash([4 * r, 4 * r]);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.setLineDash([]);
          ctx.beginPath();
          ctx.arc(x, y, 4 * r, 0, 2 * Math.PI);
          ctx.fill();
          ctx.font = `${12 * r}px system-ui, sans-serif`;
          ctx.textAlign = "left";
          ctx.textBaseline = "alphabetic";
          const label = `peak ${fmtBytes(peak.bytes)} at ${fmtSeconds(peak.t)}`;
          const w = ctx.measureText(label).width;
          const left = x + 8 * r + w > u.bbox.left + u.bbox.width ? x - 8 * r - w : x + 8 * r;
          ctx.fillText(label, left, Math.max(u.bbox.top + 12 * r, y - 6 * r));
          ctx.restore();
        }],
      },
    };
  }

  /* The drawn uPlot charts and flame graphs, fitted to the window when it
   * is resized (the libraries draw at a fixed width). Hidden ones wait:
   * they have no width, and are fitted at the next resize. */
  const charts = new Set(), flames = new Set();
  function chartWidth(node) {
    return Math.max(300, node.clientWidth || node.parentNode.clientWidth || 900);
  }
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const c of charts)
        if (c.root.offsetParent) c.setSize({ width: chartWidth(c.root.parentNode), height: c.height });
      for (const f of flames)
        if (f.node.offsetParent) f.chart.width(chartWidth(f.node)).update();
    }, 100);
  });

  /* ------------------------------- panels ------------------------------- */

  function card(cards, label, value, note, bad) {
    cards.append(el("div", { className: bad ? "bad" : "" }, el("dt", {}, label),
      el("dd", {}, value, note ? el("small", {}, note) : null)));
  }

  class Panel {
    constructor(report) {
      this.r = report;
      this.root = fromTemplate("panel-template");
      this.root.hidden = true;
      this.root.id = `report-${report.index}`;
      this.rendered = false;
      const doc = report.doc;
      /* growth, peak and held_at_finish are {..., "sites": [...]} or, as
       * report/load.c also reads them, a bare list of sites. */
      const sites = (v) => (Array.isArray(v) ? v : arr(obj(v) && v.sites));
      this.rows = {};
      for (const key of ["leaks", "kept_by_libraries", "reachable_at_exit", "teardown_leaks", "failures", "sites"])
        this.rows[key] = arr(doc[key]).filter(obj).map((e) => new SiteRow(report, e));
      for (const [key, from] of [["growth", "growth"], ["peak", "peak"], ["held", "held_at_finish"]])
        this.rows[key] = sites(doc[from]).filter(obj).map((e) => new SiteRow(report, e));
      this.summary = this.summarize();
      Object.assign(this.root.dataset, this.summary.data);
    }

    /* How many sites a list has, those not read yet included. */
    count(key) {
      return (this.r.cut[key] || {}).sites || this.rows[key].length;
    }

    /* The numbers the cards, the overview and the test read. */
    summarize() {
      const doc = this.r.doc, totals = obj(doc.totals) || {}, peak = obj(doc.peak);
      /* A list's sums, with what the page has not read yet of it. */
      const rest = (key) => this.r.cut[key] || { bytes: 0, allocations: 0 };
      const bytes = (key) => this.rows[key].reduce((t, r) => t + r.bytes, 0) + rest(key).bytes;
      const allocations = (key) => this.rows[key].reduce((t, r) => t + r.allocations, 0) + rest(key).allocations;
      const tl = timelineOf(doc);
      const peakBytes = peak && typeof peak.bytes === "number" ? peak.bytes : num(totals.peak_bytes);
      const peakNs = peak && typeof peak.time_ns === "number" ? peak.time_ns : num(totals.peak_time_ns);
      let chartPeak = null, peakAt = null;
      if (tl.xs.length) {
        let i = 0;
        for (let k = 1; k < tl.high.length; k++) if (tl.high[k] > tl.high[i]) i = k;
        chartPeak = tl.high[i];
        /* The marker stands where the chart draws the peak: at the sample
         * whose high holds it. Its label gives the report's exact time,
         * which lies before that sample (or that sample's time when the
         * report's is absent or out of range). */
        const t = tl.start > 0 && peakNs >= tl.start ? (peakNs - tl.start) / 1e9 : NaN;
        peakAt = { x: tl.xs[i], t: t >= 0 && t <= tl.xs[i] ? t : tl.xs[i] };
      }
      const held = obj(doc.held_at_finish);
      const s = {
        tl,
        peakBytes,
        peak: tl.xs.length ? { x: peakAt.x, t: peakAt.t, bytes: peakBytes } : null,
        leaked: bytes("leaks"),
        leakedAllocations: allocations("leaks"),
        teardown: bytes("teardown_leaks"),
        growth: bytes("growth"),
        hasGrowth: doc.growth !== undefined && doc.growth !== null,
        /* A run too short for the growth rule has an empty growth list that
         * says nothing: "0 B" would read as "nothing grew". Absent (an older
         * report): judged. */
        growthJudged: (obj(doc.status) || {}).growth_judged !== false,
        growthSamples: num((obj(doc.status) || {}).growth_samples),
        held: bytes("held"),
        hasHeld: held !== null || Array.isArray(doc.held_at_finish),
        failures: allocations("failures"),
        failedBytes: bytes("failures"),
        oom: obj(doc.oom),
      };
      s.data = {
        peakBytes: String(peakBytes),
        chartPeakBytes: chartPeak === null ? "" : String(chartPeak),
        leakedBytes: String(s.leaked),
        leakedAllocations: String(s.leakedAllocations),
        leakSites: String(this.count("leaks")),
        growthBytes: String(s.growth),
        growthJudged: String(s.growthJudged),
        heldBytes: String(s.held),
        heldSites: String(this.count("held")),
        failures: String(s.failures),
        peakSites: String(this.count("peak")),
        marks: String(tl.marks.length),
        peakSitesBytes: String(bytes("peak")),
        oomBytes: s.oom ? String(num(s.oom.bytes)) : "",
      };
      return s;
    }

    render() {
      if (this.rendered) return;
      this.rendered = true;
      const r = this.r, doc = r.doc, s = this.summary, root = this.root;
      slot(root, "title").textContent = r.title;
      const p = obj(doc.process) || {}, status = obj(doc.status) || {};
      const argv = arr(p.argv).filter((a) => typeof a === "string").join(" ");
      const seconds = num(p.end_time_ns) && num(p.start_time_ns) ? ` · ran ${fmtSeconds((p.end_time_ns - p.start_time_ns) / 1e9)}` : "";
      slot(root, "meta").textContent = `${argv || "(no argv)"}${str(p.python) ? ` · Python ${p.python}` : ""}${seconds}` +
        ` · report format ${num(doc.version)}` + (str(status.moment) ? ` · written at ${status.moment}` : "");
      const warnings = [];
      if (status.tracking === "off") warnings.push(`Tracking stopped early (${str(status.reason) ?? "no reason given"}): the report covers only what was recorded before.`);
      if (status.complete === false) warnings.push("A snapshot taken while the program ran, not its final report.");
      if (status.moment === "signal")
        warnings.push(`Written as signal ${num(status.signal) || "?"} killed the program: what it lists as leaks was in use then (its frees never ran), not leaked.`);
      if (num(status.stacks_dropped)) warnings.push(`${fmtInt(status.stacks_dropped)} stack(s) dropped: the stack depot was full.`);
      if (warnings.length) {
        slot(root, "warning").textContent = warnings.join(" ");
        slot(root, "warning").hidden = false;
      }
      if (r.partial) {
        const most = Math.max(...Object.values(r.cut).map((c) => c.sites));
        slot(root, "partial").textContent = `A large report (${fmtInt(most)} sites in a list): the tables and ` +
          "flame graphs show each list's largest sites while the page reads the rest; the totals are whole.";
        slot(root, "partial").hidden = false;
      } else if (r.elsewhere) {
        slot(root, "partial").textContent = "One of many reports on this page: its totals and each list's largest " +
          `sites, without stacks or timeline. \`gpuleak html ${r.file}\` makes a page of all of it.`;
        slot(root, "partial").hidden = false;
      }
      this.renderCards();
      this.renderCompositions();
      this.renderTimeline();
      this.renderFlame();
      this.renderTables();
    }

    renderCards() {
      const s = this.summary, doc = this.r.doc, totals = obj(doc.totals) || {};
      const cards = slot(this.root, "cards");
      card(cards, "Peak GPU memory", fmtBytes(s.peakBytes),
        (s.peak ? `at ${fmtSeconds(s.peak.t)}; ` : "") + `${fmtInt(s.peakBytes)} bytes`);
      card(cards, obj(doc.status) && doc.status.moment === "signal" ? "Live when killed" : "Leaked at exit", fmtBytes(s.leaked),
        `${fmtInt(s.leakedAllocations)} allocation(s) at ${fmtInt(this.count("leaks"))} site(s)`, s.leaked > 0);
      if (this.rows.teardown_leaks.length)
        card(cards, "Live at context teardown", fmtBytes(s.teardown), `${fmtInt(this.count("teardown_leaks"))} site(s)`, true);
      if (s.hasGrowth && !s.growthJudged)
        card(cards, "Grew during the run", "not judged",
          `the run was too short (${fmtInt(s.growthSamples)} sample(s) of live memory; docs/growth.md)`);
      else
        card(cards, "Grew during the run", s.hasGrowth ? fmtBytes(s.growth) : "not recorded",
          s.hasGrowth ? `at ${fmtInt(this.count("growth"))} site(s)` : "", s.growth > 0);
      if (s.hasHeld) {
        const held = obj(doc.held_at_finish) || {};
        const gpu = typeof held.gpu_bytes === "number" ? held.gpu_bytes : s.held;
        card(cards, "Held when Python finished", fmtBytes(gpu),
          `GPU memory; tensors ${fmtBytes(num(held.tensor_bytes))}; ${fmtInt(this.count("held"))} site(s) listed`);
      }
      card(cards, "Failed allocations", fmtInt(s.failures),
        s.oom ? `first out of memory: ${fmtBytes(num(s.oom.bytes))} asked` : `${fmtBytes(s.failedBytes)} asked`, s.failures > 0);
      card(cards, "Allocations", fmtInt(totals.allocations),
        `${fmtInt(totals.frees)} freed; ${fmtBytes(num(totals.bytes_allocated))} in all`);
    }

    /* What the GPU memory was made of at each moment the heap was walked
     * (held_at_finish's and the OOM's "composition"): a stacked bar and its
     * legend, each part with its bytes and largest owner. */
    renderCompositions() {
      const doc = this.r.doc, box = slot(this.root, "compositions");
      const moments = [["At Python's finish", obj(doc.held_at_finish)], ["At the out-of-memory failure", obj(doc.oom)],
        ["When this report was taken", doc], ["Tensors at their peak, by the calls that made them", obj(doc.peak)]];
      let drawn = 0;
      for (const [title, from] of moments) {
        const c = from && obj(from.composition);
        if (!c || num(c.gpu_bytes) <= 0) continue;
        const byRole = new Map(arr(c.parts).filter(obj).map((p) => [p.role, p]));
        const bar = el("div", { className: "bar" }), legend = el("ul");
        for (const [role, phrase, color] of ROLES) {
          const part = byRole.get(role);
          if (!part || num(part.bytes) <= 0) continue;
          const owner = obj(arr(part.by)[0]);
          const text = `${rolePhrase(role, phrase, obj(doc.frameworks))} ${fmtBytes(num(part.bytes))}` +
            (owner && str(owner.name) ? ` (${owner.name})` : "");
          bar.append(el("span", { title: text, style: `flex: ${num(part.bytes)} 0 0; background: ${color}` }));
          legend.append(el("li", {}, el("i", { style: `background: ${color}` }), text));
        }
        const what = c.inferred === true ? "of tensors, by the role their calls imply" : "of GPU memory, by what it is";
        box.append(el("section", { className: "composition", dataset: { role: "composition", bytes: String(num(c.gpu_bytes)) } },
          el("h3", {}, `${title}: ${fmtBytes(num(c.gpu_bytes))} ${what}`), bar, legend));
        drawn++;
      }
      box.hidden = drawn === 0;
    }

    renderTimeline() {
      const s = this.summary, tl = s.tl, box = slot(this.root, "timeline-box");
      if (!tl.xs.length) {
        slot(box, "timeline-about").textContent = this.r.elsewhere
          ? "This page leaves this report's timeline out (one of many reports)." : "This report has no timeline.";
        box.querySelector(".controls").hidden = true;
        return;
      }
      const torch = tl.kinds.tensor.some((v) => v > 0);
      slot(box, "timeline-about").textContent = "Live GPU memory over time (pinned host memory is not GPU memory). " +
        "\"High within sample\" is the exact highest since the point before, so the chart's highest point is the peak, marked in red." +
        (torch ? " With PyTorch, the driver kinds are its reserved memory and \"tensor\" its allocated memory; the difference is its cache." : "");
      const series = [{ label: "time", value: (u, v) => (v === null ? "" : fmtSeconds(v)) },
        { label: "high within sample", stroke: "#a3141d", fill: "rgba(163,20,29,0.08)", width: 1.5, value: (u, v) => (v === null ? "" : fmtBytes(v)) },
        { label: torch ? "live at sample (reserved)" : "live at sample", stroke: "#1d2330", width: 1.5, value: (u, v) => (v === null ? "" : fmtBytes(v)) }];
      const data = [tl.xs, tl.high, tl.live];
      for (const k of KINDS) {
        if (!tl.kinds[k].some((v) => v > 0)) continue;
        series.push({ label: k === "tensor" ? "tensor (allocated)" : k, stroke: KIND_COLOR[k], width: 1, dash: [5, 3],
          value: (u, v) => (v === null ? "" : fmtBytes(v)) });
        data.push(tl.kinds[k]);
      }
      const node = slot(box, "timeline");
      const from = slot(box, "zoom-from"), to = slot(box, "zoom-to");
      const opts = {
        width: chartWidth(node), height: 320,
        scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.08] } },
        axes: [timeAxis(), sizeAxis()],
        series,
        cursor: { drag: { x: true, y: false } },
        plugins: [markLines(tl.marks), peakMarker(s.peak)],
        hooks: {
          setScale: [(u, key) => {
            if (key !== "x") return;
            from.value = +u.scales.x.min.toFixed(6);
            to.value = +u.scales.x.max.toFixed(6);
          }],
        },
      };
      const chart = new uPlot(opts, data, node);
      charts.add(chart);
      const all = () => chart.setScale("x", { min: tl.xs[0], max: tl.xs[tl.xs.length - 1] });
      const apply = () => {
        const a = parseFloat(from.value), b = parseFloat(to.value);
        if (isFinite(a) && isFinite(b) && b > a) chart.setScale("x", { min: a, max: b });
      };
      from.addEventListener("change", apply);
      to.addEventListener("change", apply);
      box.querySelector('[data-action="zoom-reset"]').addEventListener("click", all);
      box.querySelector('[data-action="zoom-peak"]').addEventListener("click", () => {
        const span = Math.max((tl.xs[tl.xs.length - 1] - tl.xs[0]) / 20, 1e-6);
        chart.setScale("x", { min: s.peak.x - span, max: s.peak.x + span });
      });
    }

    /* The flame graph's measures: each a section's sites by stack, built
     * into a tree when first shown. */
    renderFlame() {
      const box = slot(this.root, "flame-box");
      const peak = obj(this.r.doc.peak) || {};
      const measures = [
        ["leaked", "leaked (live at exit)", this.rows.leaks],
        ["peak", peak.sites_at === "tensors" ? "at the tensors' peak" : "at the peak", this.rows.peak],
        ["grown", "grown during the run", this.rows.growth],
        ["held", "held when Python finished", this.rows.held],
      ].filter((m) => m[2].some((r) => r.bytes > 0));
      if (!measures.length || this.r.elsewhere) {
        box.querySelector(".controls").hidden = true;
        slot(box, "flame").append(el("p", { className: "hint" }, this.r.elsewhere
          ? "This page leaves this report's stacks out (one of many reports)."
          : "No leaked, peak, grown or held bytes to draw."));
        return;
      }
      const select = slot(box, "flame-measure");
      for (const [key, label] of measures) select.append(el("option", { value: key }, label));
      const want = new URLSearchParams(location.hash.slice(1)).get("flame");
      if (measures.some((m) => m[0] === want)) select.value = want;
      const trees = new Map();
      const details = slot(box, "flame-details");
      const node = slot(box, "flame");
      const chart = flamegraph.default()
        .width(chartWidth(node))
        .cellHeight(18)
        .inverted(true)
        .sort(false)
        .minFrameSize(1)
        .transitionDuration(250)
        .label((d) => `${d.data.name}: ${fmtBytes(d.value)} (${(100 * d.value / (this.flameTotal || 1)).toFixed(1)}%)`)
        .setDetailsElement(details)
        .setSearchMatch((d, term) => term !== "" && d.data.name.toLowerCase().includes(term))
        .setSearchHandler((results, sum, total) => {
          details.textContent = `found: ${fmtBytes(sum)} of ${fmtBytes(total)}`;
        })
        .setColorMapper((d, color) => (d.highlight ? "#e6a700" : d.data.py ? "#8fb4e3" : color));
      /* Each measure's tree is built once, when first shown (two trees of
       * 100,000 sites took 0.4 s); its total is in the panel's
       * data-flame-KEY-bytes from the start, its size in -frames once built. */
      for (const [key, , rows] of measures)
        this.root.dataset[`flame${key[0].toUpperCase() + key.slice(1)}Bytes`] = String(flameBytes(rows));
      const treeOf = (key) => {
        if (!trees.has(key)) {
          const t = performance.now();
          const tree = buildFlame(this.r, measures.find((x) => x[0] === key)[2]);
          this.root.dataset.flameBuildMs = (num(Number(this.root.dataset.flameBuildMs)) + performance.now() - t).toFixed(0);
          trees.set(key, tree);
          const name = key[0].toUpperCase() + key.slice(1);
          this.root.dataset[`flame${name}Bytes`] = String(tree.value);
          this.root.dataset[`flame${name}Frames`] = String(tree.frames);
        }
        return trees.get(key);
      };
      const show = () => {
        const tree = treeOf(select.value);
        this.flameTotal = tree.value;
        if (node.querySelector("svg")) chart.update(tree);
        else d3.select(node).datum(tree).call(chart);
        const term = slot(box, "flame-search").value.trim().toLowerCase();
        if (term) chart.search(term);
      };
      select.addEventListener("change", show);
      slot(box, "flame-search").addEventListener("input", (e) => {
        const term = e.target.value.trim().toLowerCase();
        if (term) chart.search(term);
        else { chart.clear(); details.textContent = ""; }
      });
      box.querySelector('[data-action="flame-reset"]').addEventListener("click", () => chart.resetZoom());
      flames.add({ node, chart });
      show();
    }

    renderTables() {
      const holder = slot(this.root, "tables"), r = this.r, doc = r.doc;
      const bytes = (label) => ({ label, type: "bytes", value: (x) => x.bytes });
      const allocs = (label = "allocations") => ({ label, type: "int", value: (x) => x.allocations });
      const onSelect = showSites;
      const rows = this.rows;
      new Table(holder, {
        title: "Leaks", rows: rows.leaks, total: this.count("leaks"), onSelect,
        about: "Still live at exit, by site and kind (PyTorch's cached segments are not leaks when its tensors are seen). " +
          "Click a row for its stack.",
        columns: [bytes("bytes"), allocs(), ...siteColumns(rows.leaks), { label: "owner", type: "text", value: (x) => x.owner }],
      });
      const peak = obj(doc.peak) || {};
      const at = peak.sites_at === "tensors"
        ? `PyTorch's tensors' peak (allocated memory: ${fmtBytes(num(peak.sites_at_bytes))})` : `the GPU's peak (${fmtBytes(this.summary.peakBytes)})`;
      const peakSum = Number(this.summary.data.peakSitesBytes) || 1;
      new Table(holder, {
        title: "Peak composition", rows: rows.peak, total: this.count("peak"), onSelect,
        about: `What each site held at ${at}: exact, not sampled.`,
        columns: [bytes("bytes at the peak"), { label: "share", type: "pct", value: (x) => x.bytes / peakSum }, allocs(),
          ...siteColumns(rows.peak), { label: "owner", type: "text", value: (x) => x.owner }],
      });
      if (this.summary.hasGrowth)
        new Table(holder, {
          title: "Growth", rows: rows.growth, total: this.count("growth"), onSelect,
          about: this.summary.growthJudged
            ? "Sites whose live bytes rose during the run, by bytes gained (the rule: docs/growth.md)."
            : "Growth not judged: the run was too short for the growth rule (docs/growth.md), so no site is listed.",
          columns: [bytes("gained"),
            { label: "per second", type: "bytes", value: (x) => num(x.entry.bytes_per_second), format: (v) => `${fmtBytes(v)}/s` },
            { label: "per 1k allocations", type: "bytes", value: (x) => num(x.entry.bytes_per_1k_allocations) },
            { label: "steadiness", type: "num", value: (x) => num(x.entry.steadiness) },
            { label: "trend", type: "num", value: (x) => num(x.entry.trend) },
            { label: "from", type: "bytes", value: (x) => num(x.entry.baseline_bytes) },
            { label: "to", type: "bytes", value: (x) => num(x.entry.high_bytes) },
            ...siteColumns(rows.growth)],
        });
      if (this.summary.hasHeld) {
        const held = obj(doc.held_at_finish) || {};
        const groups = new Map();
        for (const x of rows.held) {
          const key = r.originLine(x.entry);
          if (!groups.has(key)) groups.set(key, []);
          groups.get(key).push(x);
        }
        const lines = [...groups.values()].map((g) => new LineRow(r, g));
        const search = obj(held.holders_search);
        new Table(holder, {
          title: "Held when Python finished, by line", rows: lines, onSelect,
          about: "What the program still held as Python began to finish (a script's globals, caches, kept outputs), " +
            "grouped by origin line, with the Python objects that held it." +
            (!search ? "" : str(search.ended) === "audit_hooks"
              ? " The search for holders did not run: the program has audit hooks, which would have seen its work, and gpuleak runs none of the program's code."
              : ` The search for holders looked at ${fmtInt(search.objects)} object(s) and ended: ${str(search.ended) ?? "?"}.`),
          columns: [bytes("bytes"), { label: "sites", type: "int", value: (x) => x.rows.length }, allocs(),
            { label: "kinds", type: "text", value: (x) => x.kinds },
            { label: "line", type: "text", wrap: true, value: (x) => x.origin },
            { label: "grew", type: "text", value: (x) => (x.grew ? "grew" : "") },
            { label: "held by", type: "text", wrap: true, value: (x) => x.held }],
        });
      }
      if (rows.kept_by_libraries.length)
        new Table(holder, {
          title: "Kept for the process by CUDA libraries", rows: rows.kept_by_libraries, total: this.count("kept_by_libraries"), onSelect,
          about: "Live at exit, but memory a CUDA library keeps for the life of the process (PyTorch's cuBLAS " +
            "workspaces, cuBLAS, cuDNN and NCCL handles and communicators): not leaks. The line is the call " +
            "that made the library take it.",
          columns: [bytes("bytes"), allocs(), ...siteColumns(rows.kept_by_libraries),
            { label: "owner", type: "text", value: (x) => x.owner }],
        });
      if (rows.reachable_at_exit.length)
        new Table(holder, {
          title: "Still reachable at exit", rows: rows.reachable_at_exit, total: this.count("reachable_at_exit"), onSelect,
          about: "Live at exit, but held by the program's names when Python finished: its shutdown did not free " +
            "it (PyTorch leaves a model's parameters so). Still reachable, as LeakSanitizer says of a C " +
            "program's globals: not leaks.",
          columns: [bytes("bytes"), allocs(), ...siteColumns(rows.reachable_at_exit),
            { label: "held by", type: "text", wrap: true, value: (x) => x.held }],
        });
      if (rows.teardown_leaks.length)
        new Table(holder, {
          title: "Live at context teardown", rows: rows.teardown_leaks, total: this.count("teardown_leaks"), onSelect,
          about: "Live when their context was destroyed or reset (cuCtxDestroy, cuDevicePrimaryCtxReset).",
          columns: [bytes("bytes"), allocs(), { label: "teardown", type: "text", value: (x) => str(x.entry.teardown) ?? "" },
            ...siteColumns(rows.teardown_leaks)],
        });
      new Table(holder, {
        title: "Failed allocations", rows: rows.failures, total: this.count("failures"), onSelect,
        about: "Allocations the driver refused, by site: the bytes asked in all, how many times, and the CUresult.",
        columns: [bytes("asked"), allocs("count"), { label: "result", type: "num", value: (x) => num(x.entry.result) },
          ...siteColumns(rows.failures)],
      });
      const oom = obj(doc.oom);
      if (oom) {
        const refused = new SiteRow(r, { site: oom.site, kind: oom.kind, framework: oom.framework, device: oom.device,
          bytes: oom.bytes, allocations: 1 });
        const start = this.summary.tl.start || num((obj(doc.process) || {}).start_time_ns);
        const when = start && num(oom.time_ns) >= start ? ` at ${fmtSeconds((oom.time_ns - start) / 1e9)}` : "";
        const oomRows = arr(oom.sites).filter(obj).map((e) => new SiteRow(r, e));
        new Table(holder, {
          title: "Out of memory: the largest holders then", rows: oomRows, onSelect,
          about: `The first out-of-memory failure${when}: ${fmtBytes(num(oom.bytes))} of ${sitePhrase(oom)} asked` +
            (typeof oom.device === "number" ? ` on device ${oom.device}` : "") +
            ` with ${fmtBytes(num(oom.live_bytes))} live, at ${refused.origin}` +
            (num(oom.count) > 1 ? `; ${fmtInt(oom.count)} in all.` : "."),
          columns: [bytes("bytes"), ...siteColumns(oomRows)],
        });
      }
      new Table(holder, {
        title: "Sites", rows: rows.sites, total: this.count("sites"), onSelect, sortBy: 0,
        about: "Every site with its lifetime counters (the report keeps the first 1000 by peak live bytes).",
        columns: [{ label: "peak live", type: "bytes", value: (x) => num(x.entry.peak_live_bytes) },
          { label: "live at exit", type: "bytes", value: (x) => num(x.entry.live_bytes) },
          bytes("allocated in all"),
          { label: "allocations", type: "int", value: (x) => num(x.entry.total_allocations !== undefined ? x.entry.total_allocations : x.entry.allocations) },
          { label: "frees", type: "int", value: (x) => num(x.entry.frees) },
          ...siteColumns(rows.sites)],
      });
    }
  }

  /* A flame graph's tree from site rows: each site's frames, outermost
   * first, valued by the site's bytes, as d3-flame-graph's {name, value,
   * children}, children sorted by value. Built a level at a time from the
   * rows that pass through each frame kept: children under FLAME_MIN_SHARE
   * of the whole become one "(N smaller)" frame and their rows go no
   * deeper. 100,000 distinct stacks make about a million distinct frames,
   * nearly all of them that small, so they are never made at all (this
   * takes a quarter of the time of building the whole tree first).
   * tree.frames counts the frames kept. */
  /* The bytes a flame graph of rows draws: those of the rows that hold any. */
  const flameBytes = (rows) => rows.reduce((t, row) => (row.bytes > 0 ? t + row.bytes : t), 0);

  function buildFlame(report, rows) {
    /* Each row's frames: a site's ids array as the report keeps it, so
     * measures that share sites share them; ids[r][depth]. */
    const ids = [], len = [], vals = [];
    const total = flameBytes(rows);
    for (const row of rows) {
      const v = row.bytes;
      if (!(v > 0)) continue;
      let frames = report.flameIdsOf(row.entry);
      if (frames.length === 0) frames = [report.internName(`[no stack: ${row.kind}]`, false)];
      ids.push(frames);
      len.push(frames.length);
      vals.push(v);
    }
    const min = total * FLAME_MIN_SHARE;
    let frames = 0;
    /* The members' frames at depth, by frame: one group when every member
     * has the same frame there (the long common part of a program's stacks
     * is walked without a map or a copy of the members). */
    const groupsAt = (members, depth, value) => {
      const first = members.length && len[members[0]] > depth ? ids[members[0]][depth] : -1;
      let same = first >= 0;
      for (let i = 0; same && i < members.length; i++) {
        const r = members[i];
        same = len[r] > depth && ids[r][depth] === first;
      }
      if (same) return [{ id: first, value, members }];
      const groups = new Map();
      for (const r of members) {
        if (len[r] <= depth) continue;
        const id = ids[r][depth];
        let g = groups.get(id);
        if (g === undefined) groups.set(id, (g = { id, value: 0, members: [] }));
        g.value += vals[r];
        g.members.push(r);
      }
      return [...groups.values()].sort((a, b) => b.value - a.value);
    };
    const expand = (out, members, depth) => {
      frames++;
      const list = groupsAt(members, depth, out.value);
      if (!list.length) return;
      out.children = [];
      let small = 0, rest = 0;
      for (const g of list) {
        if (g.value < min) {
          small++;
          rest += g.value;
          continue;
        }
        const named = report.nameList[g.id];
        const child = { name: named.name, value: g.value };
        if (named.py) child.py = true;
        expand(child, g.members, depth + 1);
        out.children.push(child);
      }
      if (small) {
        frames++;
        out.children.push({ name: `(${small} smaller)`, value: rest });
      }
    };
    const tree = { name: "all", value: total };
    expand(tree, Array.from(vals.keys()), 0);
    tree.frames = frames;
    return tree;
  }

  /* -------------------------- several reports --------------------------- */

  /* The reports that stand out, as gpuleak html found them by merge's rule
   * (cli/outliers.h, docs/merge.md): [{report, metric, bytes, median_bytes}],
   * the ones this page holds; null when it wrote none (under three
   * reports). */
  function readOutliers(count) {
    const node = document.querySelector("script.gpuleak-outliers");
    if (!node) return null;
    const list = arr(JSON.parse(node.textContent));
    return list.filter((o) => obj(o) && Number.isInteger(o.report) && o.report >= 0 && o.report < count
      && typeof o.metric === "string" && typeof o.bytes === "number");
  }

  /* The overview's first box: each report that stands out, on one line,
   * as `gpuleak merge` says it. */
  function outlierBox(panels, outliers) {
    const box = el("section", { className: "box" }, el("h3", {}, "Reports that stand out"));
    if (!outliers.length) {
      box.append(el("p", { className: "hint" }, "None: the reports' peaks, leaks and growth are alike (docs/merge.md's rule)."));
      return box;
    }
    const ul = el("ul");
    for (const o of outliers) {
      const r = panels[o.report].r;
      ul.append(el("li", { className: "bad" }, `${r.label}: ${o.metric} ${fmtBytes(o.bytes)}; ` +
        `the ${panels.length - 1} other report(s) at a median of ${fmtBytes(num(o.median_bytes))}`));
    }
    box.append(ul, el("p", { className: "hint" }, "Above the others' median by more than six scaled median " +
      "absolute deviations, a quarter of the median and 1 MiB (docs/merge.md); first in the table below."));
    return box;
  }

  function renderOverview(panels, root, outliers) {
    const reports = panels.map((p) => p.r);
    if (outliers) {
      root.querySelector("h2").after(outlierBox(panels, outliers));
      root.dataset.outliers = outliers.map((o) => `${o.report}:${o.metric}`).join(" ");
    }
    const standsOut = (x) => (outliers || []).filter((o) => o.report === x.r.index);
    /* Each report's timeline on one time axis: seconds since the earliest
     * timeline start, so ranks started together line up. */
    const starts = panels.map((p) => p.summary.tl.start).filter((s) => s > 0);
    const base = starts.length ? Math.min(...starts) : 0;
    const sets = [], series = [{ label: "time", value: (u, v) => (v === null ? "" : fmtSeconds(v)) }];
    const palette = ["#2458c6", "#a3141d", "#2f9e44", "#7048e8", "#e8590c", "#1098ad", "#c2255c", "#5c940d"];
    panels.forEach((p, i) => {
      const tl = p.summary.tl;
      if (!tl.xs.length) return;
      const shift = tl.start > 0 && base > 0 ? (tl.start - base) / 1e9 : 0;
      sets.push([tl.xs.map((x) => x + shift), tl.high]);
      series.push({ label: p.r.label, stroke: palette[i % palette.length], width: 1.5, spanGaps: true,
        value: (u, v) => (v === null ? "" : fmtBytes(v)) });
    });
    const node = slot(root, "chart");
    if (sets.length) {
      const chart = new uPlot({
        width: chartWidth(node), height: 300,
        scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.08] } },
        axes: [timeAxis(), sizeAxis()],
        series, cursor: { drag: { x: true, y: false } },
      }, uPlot.join(sets), node);
      charts.add(chart);
    } else node.append(el("p", { className: "hint" }, "No report has a timeline."));
    const summaries = reports.filter((r) => r.elsewhere).length;
    if (summaries) node.after(el("p", { className: "hint" }, `The timelines of the ${fmtInt(summaries)} reports ` +
      "this page holds as summaries are left out of it."));
    const rows = panels.map((p) => ({ p, r: p.r, s: p.summary }));
    new Table(slot(root, "tables"), {
      title: "Reports", rows,
      about: "One row per report, those that stand out first; click one to open its tab.",
      onSelect: (row) => select(views.findIndex((v) => v.key === String(row.r.index))),
      columns: [
        /* How far the report stands out: its largest ratio to the
         * others' median, so the farthest sorts first. */
        { label: "stands out", type: "num",
          value: (x) => Math.max(0, ...standsOut(x).map((o) => o.bytes / Math.max(1, num(o.median_bytes)))),
          format: (v, x) => standsOut(x).map((o) => `${o.metric} ${fmtBytes(o.bytes)}`).join(", ") },
        { label: "file", type: "text", wrap: true, value: (x) => x.r.file },
        { label: "rank", type: "num", value: (x) => (x.r.rank === null ? -1 : x.r.rank), format: (v) => (v < 0 ? "" : String(v)) },
        { label: "pid", type: "num", value: (x) => num(x.r.pid) },
        { label: "host", type: "text", value: (x) => x.r.host ?? "" },
        { label: "peak", type: "bytes", value: (x) => x.s.peakBytes },
        { label: "leaked", type: "bytes", value: (x) => x.s.leaked },
        { label: "grew", type: "bytes", value: (x) => (x.s.growthJudged ? x.s.growth : -1),
          format: (v) => (v < 0 ? "not judged" : fmtBytes(v)) },
        { label: "held at finish", type: "bytes", value: (x) => x.s.held },
        { label: "failed allocations", type: "int", value: (x) => x.s.failures },
        { label: "out of memory", type: "text", value: (x) => (x.s.oom ? `${fmtBytes(num(x.s.oom.bytes))} asked` : "") },
      ],
    });
    const peaks = reports.length ? panels.map((p) => p.summary.peakBytes) : [];
    const lo = Math.min(...peaks), hi = Math.max(...peaks);
    root.dataset.imbalance = lo > 0 ? (hi / lo).toFixed(2) : "";
    root.dataset.reports = String(reports.length);
  }

  /* --------------------------------- tabs -------------------------------- */

  let panels = [];
  let views = []; /* [{button, panel (section), render(), tabbed}] */
  /* A page of more reports than this has a tab for the overview and each
   * report that stands out, and a list for the others (a job's ranks). */
  const TABS_MAX = 16;
  let picker = null;

  function select(i) {
    views.forEach((v, k) => {
      const on = k === i;
      v.button.setAttribute("aria-selected", on ? "true" : "false");
      v.button.tabIndex = on ? 0 : -1;
      v.section.hidden = !on;
      if (on && picker) picker.value = v.tabbed ? "" : v.key;
      /* Drawn when first shown: a hidden panel has no width to draw in,
       * and a page of many large reports draws only what is looked at. */
      if (on) v.render();
    });
    const params = new URLSearchParams(location.hash.slice(1));
    const want = views[i].key;
    if (params.get("report") !== want) {
      params.set("report", want);
      history.replaceState(null, "", `#${params}`);
    }
  }

  function main() {
    const t0 = performance.now();
    const nodes = [...document.querySelectorAll("script.gpuleak-report")];
    const reports = nodes.map((node, i) => {
      const data = JSON.parse(node.textContent);
      /* The text is not needed again; dropping it halves what a large
       * report keeps in memory. */
      node.textContent = "";
      return new Report(i, str(data.file) ?? `report ${i + 1}`, obj(data.report) || {}, data.cut, data.elsewhere === true);
    });
    const tParsed = performance.now();
    const outliers = readOutliers(reports.length);
    panels = reports.map((r) => new Panel(r));
    const tModel = performance.now();
    const tabs = document.getElementById("tabs"), main = document.getElementById("panels");
    if (panels.length > 1) {
      const section = fromTemplate("overview-template");
      section.hidden = true;
      section.id = "overview";
      let done = false;
      views.push({ key: "all", section, button: el("button", { type: "button", role: "tab" }, "All reports"),
        render: () => { if (!done) { done = true; renderOverview(panels, section, outliers); } } });
      main.append(section);
    }
    for (const p of panels) {
      views.push({ key: String(p.r.index), section: p.root, render: () => p.render(),
        button: el("button", { type: "button", role: "tab", title: p.r.title }, p.r.label) });
      main.append(p.root);
    }
    const standing = new Set((outliers || []).map((o) => String(o.report)));
    const many = panels.length > TABS_MAX;
    views.forEach((v, i) => {
      v.button.addEventListener("click", () => select(i));
      v.tabbed = !many || v.key === "all" || standing.has(v.key);
      if (v.tabbed) tabs.append(v.button);
    });
    if (many) {
      const others = views.filter((v) => !v.tabbed);
      picker = el("select", { className: "report-pick", title: "The reports without a tab of their own" },
        el("option", { value: "" }, `${fmtInt(others.length)} other reports…`),
        ...others.map((v) => el("option", { value: v.key }, v.button.textContent)));
      picker.addEventListener("change", () => {
        const i = views.findIndex((v) => v.key === picker.value);
        if (i >= 0) select(i);
      });
      tabs.append(picker);
    }
    document.title = panels.length === 1 ? `gpuleak: ${reports[0].title}` : `gpuleak: ${panels.length} reports`;
    const want = new URLSearchParams(location.hash.slice(1)).get("report");
    const first = Math.max(0, views.findIndex((v) => v.key === want));
    if (views.length) select(first);
    else {
      const e = document.getElementById("page-error");
      e.textContent = "This page holds no report.";
      e.hidden = false;
    }
    const html = document.documentElement;
    /* Where a page's load time goes, for the benchmarks: the browser's own
     * reading of the page before this script, JSON.parse, the model, the
     * first tab drawn. */
    html.dataset.startMs = t0.toFixed(0);
    html.dataset.modelMs = (tModel - tParsed).toFixed(0);
    html.dataset.drawMs = (performance.now() - tModel).toFixed(0);
    html.dataset.parseMs = (tParsed - t0).toFixed(0);
    html.dataset.loadMs = performance.now().toFixed(0);
    /* A report in two parts: data-whole-ms comes when the rest is drawn. */
    if (panels.some((p) => p.r.partial)) html.dataset.parts = "2";
    if (!window.gpuleakErrors.length) html.dataset.status = "ready";
  }

  /* Appends each list of more to the one at the same place in into, and
   * adds each object's members: a report's rest (cli/html.c) to its head. */
  function extend(into, more) {
    for (const [key, value] of Object.entries(more)) {
      if (Array.isArray(value) && Array.isArray(into[key])) for (const v of value) into[key].push(v);
      else if (obj(value) && obj(into[key])) extend(into[key], value);
      else into[key] = value;
    }
  }

  /* A panel made anew from its report made whole, in place of the old. */
  function replacePanel(old, report) {
    const p = new Panel(report);
    for (const c of charts) if (old.root.contains(c.root)) charts.delete(c);
    for (const f of flames) if (old.root.contains(f.node)) flames.delete(f);
    p.root.hidden = old.root.hidden;
    old.root.replaceWith(p.root);
    panels[panels.indexOf(old)] = p;
    const view = views.find((v) => v.section === old.root);
    view.section = p.root;
    view.render = () => p.render();
    if (!p.root.hidden) p.render();
  }

  /* The rests of the big reports, once the browser has read the page: each
   * report made whole, and its panel drawn again, unless the reader is
   * already at work on it (a click, a key, a filter typed): then the panel
   * offers to show everything, and changes only when asked. */
  let touched = false;
  function complete() {
    const html = document.documentElement, t0 = performance.now();
    let parse = 0, model = 0;
    for (const node of document.querySelectorAll("script.gpuleak-rest")) {
      const old = panels[Number(node.dataset.report)];
      if (!old || !old.r.partial) continue;
      const t = performance.now();
      const more = obj(JSON.parse(node.textContent)) || {};
      node.textContent = "";
      const tParsed = performance.now();
      extend(old.r.doc, more);
      const whole = new Report(old.r.index, old.r.file, old.r.doc);
      parse += tParsed - t;
      model += performance.now() - tParsed;
      if (!touched || !old.rendered) {  /* a tab not yet shown changes unseen */
        replacePanel(old, whole);
        continue;
      }
      const note = slot(old.root, "partial");
      note.textContent = "The page has read the whole report.";
      note.append(el("button", { type: "button", onclick: () => replacePanel(old, whole) },
        "Show every site"));
    }
    /* For the benchmarks: when the browser had read the rest, its parse,
     * the reports made whole, their panels drawn again; and when the page
     * had every site, from navigation. */
    html.dataset.restReadMs = t0.toFixed(0);
    html.dataset.restParseMs = parse.toFixed(0);
    html.dataset.restModelMs = model.toFixed(0);
    html.dataset.restDrawMs = (performance.now() - t0 - parse - model).toFixed(0);
    html.dataset.wholeMs = performance.now().toFixed(0);
  }

  try {
    main();
    if (panels.some((p) => p.r.partial)) {
      for (const type of ["pointerdown", "keydown", "input"])
        document.addEventListener(type, () => { touched = true; }, { capture: true, once: true });
      document.addEventListener("DOMContentLoaded", () => {
        try {
          complete();
        } catch (e) {
          window.gpuleakError(e && e.stack ? e.stack : e);
        }
      });
    }
  } catch (e) {
    window.gpuleakError(e && e.stack ? e.stack : e);
    const node = document.getElementById("page-error");
    node.textContent = `The page could not be drawn: ${e}`;
    node.hidden = false;
  }
})();
