/*
 * tally flamegraph: the page's script. It reads the folded tree that tally wrote into
 * the #tally-data block and draws it as SVG: one rect per frame at least a pixel wide,
 * narrower neighbours merged into one grey block, so a profile of any size draws only
 * what the screen can show. Click a frame to zoom to it, Reset (or Esc) to go back;
 * type a regular expression in the search box to highlight the matching frames and
 * total what they cover (nested matches counted once); hover for a frame's samples.
 * "Callers" reverses the stacks (each function with its callers above it), "Icicle"
 * puts the root at the top. A differential graph (tally flamegraph --diff) colours
 * each frame by how much it grew (red) or shrank (blue) from the old profile.
 */
(function () {
	'use strict';

	var FRAME_H = 17, MIN_PX = 1, CHAR_W = 7.2, TEXT_PAD = 3;
	var KIND = { user: 0, kernel: 1, inlined: 2, jit: 3, process: 4, root: 5 };
	var KIND_LABEL = ['user', 'kernel', 'inlined', 'JIT', 'process', ''];

	var data = JSON.parse(document.getElementById('tally-data').textContent);
	var names = data.names;
	var diff = !!data.diff;
	var svg = document.getElementById('svg');
	var tip = document.getElementById('tip');
	var details = document.getElementById('details');
	var searchBox = document.getElementById('search');
	var matchedEl = document.getElementById('matched');

	/* ---- trees ---------------------------------------------------------------------- */

	/* A tree in preorder: per node its name id, kind, depth, weights (cur: the new or
	 * only profile; old: the old one of a diff) and sample counts, parent, the index
	 * after its subtree, and its x offset in weight units. */
	function emptyTree(n) {
		return {
			n: n,
			name: new Int32Array(n), kind: new Uint8Array(n), depth: new Int32Array(n),
			val: new Float64Array(n), smp: new Float64Array(n),
			val0: new Float64Array(diff ? n : 0), smp0: new Float64Array(diff ? n : 0),
			parent: new Int32Array(n), next: new Int32Array(n), start: new Float64Array(n),
			maxDepth: 0
		};
	}

	/* parent, next and maxDepth from the depths of a preorder */
	function link(t) {
		var stack = [], i, d;

		for (i = 0; i < t.n; i++) {
			d = t.depth[i];
			while (stack.length > d) t.next[stack.pop()] = i;
			t.parent[i] = d ? stack[d - 1] : 0;
			stack.push(i);
			if (d > t.maxDepth) t.maxDepth = d;
		}
		while (stack.length) t.next[stack.pop()] = t.n;
	}

	function fromData() {
		var v = data.nodes, stride = diff ? 7 : 5, n = v.length / stride, t = emptyTree(n), i, o;

		for (i = 0; i < n; i++) {
			o = i * stride;
			t.name[i] = v[o]; t.kind[i] = v[o + 1]; t.depth[i] = v[o + 2];
			t.val[i] = v[o + 3]; t.smp[i] = v[o + 4];
			if (diff) { t.val0[i] = v[o + 5]; t.smp0[i] = v[o + 6]; }
		}
		link(t);
		return t;
	}

	/* The callers' view: every stack reversed, its innermost frame on the root. Each
	 * node's own weight (what ends there) goes up its reversed path. */
	function reversed(t) {
		var kids = [new Map()], nm = [0], kd = [KIND.root], par = [0];
		var w = [0], s = [0], w0 = [0], s0 = [0];
		var self = new Float64Array(t.n), selfS = new Float64Array(t.n);
		var self0 = new Float64Array(diff ? t.n : 0), selfS0 = new Float64Array(diff ? t.n : 0);
		var i, p, node, key, c, order, out, stack, k, list;

		for (i = 0; i < t.n; i++) {
			self[i] += t.val[i]; selfS[i] += t.smp[i];
			if (diff) { self0[i] += t.val0[i]; selfS0[i] += t.smp0[i]; }
			if (i) {
				p = t.parent[i];
				self[p] -= t.val[i]; selfS[p] -= t.smp[i];
				if (diff) { self0[p] -= t.val0[i]; selfS0[p] -= t.smp0[i]; }
			}
		}
		w[0] = t.val[0]; s[0] = t.smp[0];
		if (diff) { w0[0] = t.val0[0]; s0[0] = t.smp0[0]; }
		for (i = 1; i < t.n; i++) {
			if (!(self[i] > 0 || selfS[i] > 0 || (diff && (self0[i] > 0 || selfS0[i] > 0))))
				continue;
			node = 0;
			for (p = i; p; p = t.parent[p]) {
				key = t.name[p] * 8 + t.kind[p];
				c = kids[node].get(key);
				if (c === undefined) {
					c = nm.length;
					nm.push(t.name[p]); kd.push(t.kind[p]); par.push(node);
					w.push(0); s.push(0); w0.push(0); s0.push(0);
					kids.push(new Map());
					kids[node].set(key, c);
				}
				w[c] += self[i]; s[c] += selfS[i];
				if (diff) { w0[c] += self0[i]; s0[c] += selfS0[i]; }
				node = c;
			}
		}
		/* preorder, children by name then kind */
		out = emptyTree(nm.length);
		order = 0;
		stack = [[0, 0]];
		while (stack.length) {
			k = stack.pop();
			i = k[0];
			out.name[order] = nm[i]; out.kind[order] = kd[i]; out.depth[order] = k[1];
			out.val[order] = w[i]; out.smp[order] = s[i];
			if (diff) { out.val0[order] = w0[i]; out.smp0[order] = s0[i]; }
			order++;
			list = Array.from(kids[i].values());
			list.sort(function (a, b) {
				var x = names[nm[a]], y = names[nm[b]];
				return x < y ? -1 : x > y ? 1 : kd[a] - kd[b];
			});
			for (c = list.length - 1; c >= 0; c--) stack.push([list[c], k[1] + 1]);
		}
		link(out);
		return out;
	}

	/* ---- state ---------------------------------------------------------------------- */

	var base = fromData(), rev = null, tree = base;
	var zoom = 0;
	var useOld = false, normalize = data.normalize !== false, icicle = !!data.inverted;
	var match = null;		/* Uint8Array by name id, or null: no search */
	var scaleOld = 1;		/* diff: old weights times this compare with new ones */
	var maxDelta = 0;

	function width(t, i) { return useOld ? t.val0[i] : t.val[i]; }

	/* x offsets: each node starts where its previous sibling ends */
	function layout(t) {
		var cursor = new Float64Array(t.maxDepth + 2), i, d;

		for (i = 0; i < t.n; i++) {
			d = t.depth[i];
			t.start[i] = d ? cursor[d] : 0;
			cursor[d] = t.start[i] + width(t, i);
			cursor[d + 1] = t.start[i];
		}
	}

	function deltaOf(t, i) { return t.val[i] - t.val0[i] * scaleOld; }

	function diffScale(t) {
		var i, d;

		scaleOld = normalize && t.val0[0] > 0 ? t.val[0] / t.val0[0] : 1;
		maxDelta = 0;
		for (i = 1; i < t.n; i++) {
			d = Math.abs(deltaOf(t, i));
			if (d > maxDelta) maxDelta = d;
		}
	}

	/* ---- colours -------------------------------------------------------------------- */

	function hash(s) {
		var h = 2166136261, i;

		for (i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
		return (h >>> 0) / 4294967296;
	}

	var hashes = new Float64Array(names.length).fill(-1);

	/* FlameGraph's palettes: reds for user code, light orange for the kernel, aqua
	 * for inlined functions, green for JIT code; the name picks the shade */
	function kindColour(k, v) {
		var r, g, b;

		switch (k) {
		case KIND.kernel: r = 235 + 20 * v; g = 150 + 55 * v; b = 30 + 50 * v; break;
		case KIND.inlined: r = 60 + 60 * v; g = 175 + 50 * v; b = 175 + 50 * v; break;
		case KIND.jit: r = 60 + 60 * v; g = 190 + 55 * v; b = 60 + 60 * v; break;
		case KIND.process: r = 190 + 25 * v; g = 190 + 25 * v; b = 215 + 25 * v; break;
		case KIND.root: return 'rgb(215,215,215)';
		default: r = 200 + 55 * v; g = 40 + 90 * ((v * 7.13) % 1); b = 30 + 30 * v; break;
		}
		return 'rgb(' + (r | 0) + ',' + (g | 0) + ',' + (b | 0) + ')';
	}

	function colour(t, i) {
		var v, d, f, id = t.name[i];

		if (match && match[id]) return 'rgb(230,0,230)';
		if (diff && t.kind[i] !== KIND.root) {
			d = deltaOf(t, i);
			f = maxDelta > 0 ? Math.min(1, Math.abs(d) / maxDelta) : 0;
			v = Math.round(245 - 215 * f);
			return d > 0 ? 'rgb(255,' + v + ',' + v + ')' : d < 0 ? 'rgb(' + v + ',' + v + ',255)' :
				'rgb(245,245,245)';
		}
		v = hashes[id];
		if (v < 0) v = hashes[id] = hash(names[id]);
		return kindColour(t.kind[i], v);
	}

	/* ---- drawing -------------------------------------------------------------------- */

	function esc(s) {
		return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
	}

	function label(s, px) {
		var fit = Math.floor((px - 2 * TEXT_PAD) / CHAR_W);

		if (fit < 3) return '';
		return s.length <= fit ? s : s.slice(0, fit - 2) + '..';
	}

	function render() {
		var t = tree, W = svg.clientWidth || document.documentElement.clientWidth || 1200;
		var total = width(t, zoom), scale = total > 0 ? W / total : 0, x0 = t.start[zoom];
		var items = [], maxD = 0, H, out = [], i, anc = [];

		/* what to draw: i and what is at least a pixel wide above it, narrower
		 * neighbours merged into one item ([node, x, w] or [-parent, x, w, count]) */
		function subtree(i) {
			var c = i + 1, end = t.next[i], runN = 0, runX = 0, runW = 0, w, d = t.depth[i];

			items.push([i, (t.start[i] - x0) * scale, width(t, i) * scale]);
			if (d > maxD) maxD = d;
			function flush() {
				if (runN && runW >= MIN_PX) {
					items.push([-1 - i, runX, runW, runN]);
					if (d + 1 > maxD) maxD = d + 1;
				}
				runN = 0; runW = 0;
			}
			for (; c < end; c = t.next[c]) {
				w = width(t, c) * scale;
				if (w <= 0) continue;
				if (w < MIN_PX) {
					if (!runN) runX = (t.start[c] - x0) * scale;
					runN++; runW += w;
				} else {
					flush();
					subtree(c);
				}
			}
			flush();
		}

		for (i = t.parent[zoom]; zoom && i >= 0; i = t.parent[i]) {
			anc.push(i);
			if (!i) break;
		}
		if (scale > 0) subtree(zoom);
		/* only as tall as the deepest frame drawn */
		H = (maxD + 1) * FRAME_H;
		function y(d) { return icicle ? d * FRAME_H : H - (d + 1) * FRAME_H; }
		function rect(attrs, x, yy, w, fill, text) {
			out.push('<g ' + attrs + '><rect x="' + x.toFixed(1) + '" y="' + yy + '" width="' +
				 w.toFixed(1) + '" height="' + (FRAME_H - 1) + '"' + (fill ? ' fill="' + fill + '"' : '') +
				 '/>' + (text ? '<text x="' + (x + TEXT_PAD).toFixed(1) + '" y="' +
				 (yy + FRAME_H / 2 - 0.5) + '">' + esc(text) + '</text>' : '') + '</g>');
		}
		anc.forEach(function (a) {
			rect('data-i="' + a + '" class="anc"', 0, y(t.depth[a]), W, colour(t, a),
			     label(names[t.name[a]], W));
		});
		items.forEach(function (it) {
			var p;

			if (it[0] >= 0) {
				rect('data-i="' + it[0] + '"', it[1], y(t.depth[it[0]]), it[2], colour(t, it[0]),
				     label(names[t.name[it[0]]], it[2]));
			} else {
				p = -1 - it[0];
				rect('class="merged" data-m="' + p + '" data-n="' + it[3] + '"', it[1],
				     y(t.depth[p] + 1), it[2], '', it[3] > 1 ? label(it[3] + ' frames', it[2]) : '');
			}
		});
		svg.setAttribute('height', H);
		svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
		svg.innerHTML = out.join('');
		document.documentElement.dataset.drawn = String(anc.length + items.length);
	}

	/* ---- numbers and descriptions --------------------------------------------------- */

	function num(n) { return Math.round(n).toLocaleString('en-US'); }
	function pct(a, b) { return b > 0 ? (100 * a / b).toFixed(2) + '%' : '-'; }

	function describe(i) {
		var t = tree, nm = names[t.name[i]], k = t.kind[i], s;

		s = nm + (KIND_LABEL[k] ? '  [' + KIND_LABEL[k] + ']' : '');
		if (!diff)
			return s + '\n' + num(t.smp[i]) + ' samples, ' + pct(t.val[i], t.val[0]) + ' of all' +
				(zoom ? ', ' + pct(t.val[i], t.val[zoom]) + ' of the zoomed frame' : '');
		var o = t.val0[i] * scaleOld, n = t.val[i];
		var d = t.val[0] > 0 ? 100 * (n - o) / t.val[0] : 0;
		return s + '\nold: ' + num(t.smp0[i]) + ' samples (' + pct(t.val0[i], t.val0[0]) + ')' +
			'\nnew: ' + num(t.smp[i]) + ' samples (' + pct(n, t.val[0]) + ')' +
			'\nchange: ' + (d >= 0 ? '+' : '') + d.toFixed(2) + ' points of the new total' +
			(normalize ? ' (old scaled to the new total)' : '');
	}

	function describeMerged(g) {
		return g.dataset.n + ' frames, each under a pixel wide: click to zoom to ' +
			names[tree.name[+g.dataset.m]];
	}

	/* ---- search --------------------------------------------------------------------- */

	function setSearch(q) {
		var re, i, t = tree, total = 0, smp = 0;

		if (!q) {
			match = null;
			matchedEl.textContent = '';
			document.documentElement.dataset.matched = '';
			render();
			return;
		}
		/* smart case: lower-case queries match any case */
		try {
			re = new RegExp(q, q === q.toLowerCase() ? 'i' : '');
		} catch (e) {
			re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), q === q.toLowerCase() ? 'i' : '');
		}
		match = new Uint8Array(names.length);
		for (i = 0; i < names.length; i++) match[i] = re.test(names[i]) ? 1 : 0;
		/* a match inside a match is already counted */
		for (i = 1; i < t.n;) {
			if (match[t.name[i]] && t.kind[i] !== KIND.root) {
				total += width(t, i);
				smp += useOld ? t.smp0[i] : t.smp[i];
				i = t.next[i];
			} else {
				i++;
			}
		}
		matchedEl.textContent = 'Matched: ' + pct(total, width(t, 0)) + ' (' + num(smp) + ' samples)';
		document.documentElement.dataset.matched = String(smp);
		render();
	}

	/* ---- events --------------------------------------------------------------------- */

	function frameOf(ev) {
		var g = ev.target && ev.target.closest ? ev.target.closest('g') : null;

		return g && svg.contains(g) ? g : null;
	}

	svg.addEventListener('click', function (ev) {
		var g = frameOf(ev);

		if (!g) return;
		zoom = g.dataset.m !== undefined ? +g.dataset.m : +g.dataset.i;
		render();
	});
	svg.addEventListener('mousemove', function (ev) {
		var g = frameOf(ev), text;

		if (!g) { tip.hidden = true; return; }
		text = g.dataset.m !== undefined ? describeMerged(g) : describe(+g.dataset.i);
		tip.textContent = text;
		details.textContent = text.replace(/\n/g, '   ');
		tip.hidden = false;
		var x = ev.clientX + 14, y = ev.clientY + 16, r = tip.getBoundingClientRect();
		if (x + r.width > window.innerWidth) x = Math.max(0, ev.clientX - r.width - 8);
		if (y + r.height > window.innerHeight) y = Math.max(0, ev.clientY - r.height - 8);
		tip.style.left = x + 'px';
		tip.style.top = y + 'px';
	});
	svg.addEventListener('mouseleave', function () { tip.hidden = true; });

	document.getElementById('reset').addEventListener('click', function () {
		zoom = 0;
		render();
	});
	searchBox.addEventListener('input', function () { setSearch(searchBox.value); });
	document.addEventListener('keydown', function (ev) {
		if (ev.key === 'Escape') {
			zoom = 0;
			if (document.activeElement === searchBox) { searchBox.value = ''; setSearch(''); }
			render();
		} else if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f') {
			ev.preventDefault();
			searchBox.focus();
		}
	});

	function switchTree(t) {
		tree = t;
		zoom = 0;
		layout(tree);
		if (diff) diffScale(tree);
		setSearch(searchBox.value);
	}

	var revBox = document.getElementById('reverse'), iceBox = document.getElementById('icicle');
	revBox.checked = !!data.reverse;
	iceBox.checked = icicle;
	revBox.addEventListener('change', function () {
		if (revBox.checked && !rev) rev = reversed(base);
		switchTree(revBox.checked ? rev : base);
	});
	iceBox.addEventListener('change', function () {
		icicle = iceBox.checked;
		render();
	});
	if (diff) {
		var normBox = document.getElementById('normalize'), oldBox = document.getElementById('oldwidth');

		document.getElementById('diffctl').hidden = false;
		normBox.checked = normalize;
		normBox.addEventListener('change', function () {
			normalize = normBox.checked;
			diffScale(tree);
			render();
		});
		oldBox.addEventListener('change', function () {
			useOld = oldBox.checked;
			switchTree(tree);
		});
	}
	window.addEventListener('resize', function () { render(); });

	/* ---- the header, then the first picture ----------------------------------------- */

	document.getElementById('subtitle').textContent = data.subtitle || '';
	(function legend() {
		var el = document.getElementById('legend'), kinds, html = '';

		if (diff) {
			html = '<span class="sw" style="background:rgb(255,30,30)"></span>grew' +
				'<span class="sw" style="background:rgb(30,30,255)"></span>shrank' +
				'<span class="sw" style="background:rgb(245,245,245)"></span>unchanged' +
				' &nbsp;(colour: change in share; width: the ' + (useOld ? 'old' : 'new') + ' profile)';
		} else {
			kinds = [['user', KIND.user], ['kernel', KIND.kernel], ['inlined', KIND.inlined],
				 ['JIT', KIND.jit], ['process', KIND.process]];
			kinds.forEach(function (k) {
				html += '<span class="sw" style="background:' + kindColour(k[1], 0.5) + '"></span>' + k[0];
			});
		}
		html += ' &nbsp;&middot;&nbsp; frames under a pixel wide are merged (grey)';
		el.innerHTML = html;
	}());
	tree = data.reverse ? (rev = reversed(base)) : base;
	layout(tree);
	if (diff) diffScale(tree);
	render();
	/* a flame graph taller than the window opens at its root, as one reads it */
	if (!icicle && svg.getBoundingClientRect().bottom > window.innerHeight)
		window.scrollTo(0, svg.getBoundingClientRect().bottom + window.scrollY - window.innerHeight + 40);
	/* for scripts driving the page (tests/cli/test-flamegraph.sh): the full name and
	 * kind of a drawn frame, whose label may be cut short or left out */
	window.tallyFlame = {
		nameOf: function (g) {
			return g && g.dataset.i !== undefined ? names[tree.name[+g.dataset.i]] : null;
		},
		kindOf: function (g) {
			return g && g.dataset.i !== undefined ? KIND_LABEL[tree.kind[+g.dataset.i]] : null;
		}
	};

	/* when the first picture was drawn and when it was on the screen, in ms from the
	 * start of loading the page (bench/flamegraph.sh reads them) */
	document.documentElement.dataset.nodes = String(tree.n);
	document.documentElement.dataset.renderMs = performance.now().toFixed(1);
	requestAnimationFrame(function () {
		setTimeout(function () {
			document.documentElement.dataset.paintMs = performance.now().toFixed(1);
		}, 0);
	});
}());
