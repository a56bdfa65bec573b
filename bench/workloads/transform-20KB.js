// A model-written transformer of an MCP tool result: helpers, then the reshape.
function field0(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score1(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels2(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when3(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field4(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score5(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels6(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when7(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field8(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score9(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels10(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when11(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field12(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score13(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels14(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when15(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field16(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score17(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels18(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when19(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field20(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score21(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels22(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when23(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field24(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score25(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels26(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when27(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field28(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score29(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels30(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when31(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field32(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score33(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels34(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when35(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field36(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score37(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels38(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when39(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field40(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score41(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels42(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when43(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field44(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score45(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels46(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when47(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field48(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score49(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels50(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when51(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field52(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score53(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels54(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when55(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field56(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score57(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels58(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when59(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field60(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score61(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels62(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when63(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field64(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score65(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels66(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when67(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field68(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score69(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels70(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when71(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field72(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score73(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels74(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when75(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field76(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score77(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels78(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when79(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field80(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score81(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels82(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when83(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field84(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score85(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels86(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when87(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field88(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score89(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels90(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when91(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field92(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score93(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels94(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when95(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field96(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score97(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels98(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when99(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field100(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score101(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels102(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when103(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field104(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score105(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels106(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when107(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field108(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score109(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels110(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when111(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field112(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score113(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels114(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when115(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field116(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score117(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels118(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when119(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field120(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score121(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels122(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when123(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field124(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score125(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels126(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when127(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field128(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score129(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels130(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when131(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field132(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score133(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels134(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when135(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field136(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score137(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels138(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when139(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field140(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score141(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels142(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when143(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field144(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score145(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels146(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when147(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field148(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score149(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels150(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when151(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field152(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score153(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels154(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when155(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field156(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score157(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels158(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when159(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field160(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score161(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels162(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when163(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field164(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score165(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels166(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when167(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field168(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score169(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels170(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
const items = input.content[0].items;
const open = items.filter(i => i.state === "open");
const byAuthor = {};
for (const i of open) {
  const a = byAuthor[i.author.login] || (byAuthor[i.author.login] = { count: 0, score: 0, labels: {} });
  a.count++;
  a.score += score1(i);
  for (const l of labels2(i)) a.labels[l] = (a.labels[l] || 0) + 1;
}
({
  total: items.length,
  open: open.length,
  titles: open.slice(0, 20).map(i => ({ id: i.id, title: field0(i), updated: when3(i) })),
  authors: Object.keys(byAuthor).sort().map(k => ({ login: k, ...byAuthor[k], score: Math.round(byAuthor[k].score) })),
})
