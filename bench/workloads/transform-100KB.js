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
function when171(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field172(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score173(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels174(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when175(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field176(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score177(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels178(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when179(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field180(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score181(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels182(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when183(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field184(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score185(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels186(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when187(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field188(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score189(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels190(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when191(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field192(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score193(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels194(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when195(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field196(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score197(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels198(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when199(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field200(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score201(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels202(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when203(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field204(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score205(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels206(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when207(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field208(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score209(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels210(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when211(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field212(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score213(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels214(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when215(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field216(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score217(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels218(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when219(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field220(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score221(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels222(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when223(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field224(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score225(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels226(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when227(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field228(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score229(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels230(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when231(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field232(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score233(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels234(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when235(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field236(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score237(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels238(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when239(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field240(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score241(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels242(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when243(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field244(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score245(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels246(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when247(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field248(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score249(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels250(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when251(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field252(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score253(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels254(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when255(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field256(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score257(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels258(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when259(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field260(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score261(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels262(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when263(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field264(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score265(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels266(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when267(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field268(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score269(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels270(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when271(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field272(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score273(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels274(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when275(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field276(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score277(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels278(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when279(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field280(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score281(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels282(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when283(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field284(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score285(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels286(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when287(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field288(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score289(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels290(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when291(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field292(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score293(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels294(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when295(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field296(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score297(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels298(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when299(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field300(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score301(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels302(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when303(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field304(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score305(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels306(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when307(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field308(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score309(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels310(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when311(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field312(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score313(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels314(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when315(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field316(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score317(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels318(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when319(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field320(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score321(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels322(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when323(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field324(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score325(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels326(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when327(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field328(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score329(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels330(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when331(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field332(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score333(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels334(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when335(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field336(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score337(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels338(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when339(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field340(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score341(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels342(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when343(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field344(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score345(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels346(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when347(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field348(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score349(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels350(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when351(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field352(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score353(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels354(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when355(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field356(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score357(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels358(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when359(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field360(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score361(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels362(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when363(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field364(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score365(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels366(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when367(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field368(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score369(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels370(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when371(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field372(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score373(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels374(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when375(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field376(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score377(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels378(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when379(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field380(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score381(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels382(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when383(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field384(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score385(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels386(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when387(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field388(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score389(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels390(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when391(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field392(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score393(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels394(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when395(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field396(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score397(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels398(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when399(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field400(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score401(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels402(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when403(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field404(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score405(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels406(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when407(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field408(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score409(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels410(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when411(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field412(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score413(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels414(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when415(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field416(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score417(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels418(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when419(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field420(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score421(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels422(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when423(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field424(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score425(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels426(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when427(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field428(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score429(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels430(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when431(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field432(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score433(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels434(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when435(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field436(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score437(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels438(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when439(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field440(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score441(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels442(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when443(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field444(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score445(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels446(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when447(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field448(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score449(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels450(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when451(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field452(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score453(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels454(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when455(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field456(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score457(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels458(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when459(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field460(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score461(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels462(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when463(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field464(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score465(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels466(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when467(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field468(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score469(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels470(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when471(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field472(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score473(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels474(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when475(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field476(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score477(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels478(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when479(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field480(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score481(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels482(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when483(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field484(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score485(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels486(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when487(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field488(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score489(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels490(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when491(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field492(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score493(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels494(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when495(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field496(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score497(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels498(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when499(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field500(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score501(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels502(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when503(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field504(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score505(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels506(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when507(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field508(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score509(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels510(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when511(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field512(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score513(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels514(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when515(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field516(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score517(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels518(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when519(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field520(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score521(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels522(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when523(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field524(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score525(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels526(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when527(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field528(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score529(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels530(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when531(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field532(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score533(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels534(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when535(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field536(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score537(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels538(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when539(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field540(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score541(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels542(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when543(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field544(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score545(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels546(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when547(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field548(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score549(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels550(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when551(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field552(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score553(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels554(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when555(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field556(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score557(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels558(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when559(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field560(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score561(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels562(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when563(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field564(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score565(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels566(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when567(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field568(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score569(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels570(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when571(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field572(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score573(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels574(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when575(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field576(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score577(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels578(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when579(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field580(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score581(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels582(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when583(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field584(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score585(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels586(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when587(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field588(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score589(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels590(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when591(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field592(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score593(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels594(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when595(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field596(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score597(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels598(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when599(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field600(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score601(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels602(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when603(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field604(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score605(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels606(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when607(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field608(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score609(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels610(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when611(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field612(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score613(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels614(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when615(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field616(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score617(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels618(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when619(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field620(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score621(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels622(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when623(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field624(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score625(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels626(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when627(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field628(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score629(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels630(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when631(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field632(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score633(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels634(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when635(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field636(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score637(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels638(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when639(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field640(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score641(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels642(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when643(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field644(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score645(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels646(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when647(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field648(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score649(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels650(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when651(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field652(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score653(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels654(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when655(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field656(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score657(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels658(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when659(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field660(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score661(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels662(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when663(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field664(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score665(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels666(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when667(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field668(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score669(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels670(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when671(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field672(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score673(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels674(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when675(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field676(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score677(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels678(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when679(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field680(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score681(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels682(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when683(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field684(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score685(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels686(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when687(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field688(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score689(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels690(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when691(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field692(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score693(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels694(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when695(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field696(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score697(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels698(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when699(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field700(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score701(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels702(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when703(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field704(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score705(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels706(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when707(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field708(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score709(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels710(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when711(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field712(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score713(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels714(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when715(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field716(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score717(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels718(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when719(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field720(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score721(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels722(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when723(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field724(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score725(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels726(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when727(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field728(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score729(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels730(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when731(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field732(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score733(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels734(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when735(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field736(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score737(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels738(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when739(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field740(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score741(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels742(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when743(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field744(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score745(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels746(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when747(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field748(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score749(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels750(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when751(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field752(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score753(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels754(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when755(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field756(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score757(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels758(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when759(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field760(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score761(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels762(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when763(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field764(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score765(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels766(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when767(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field768(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score769(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels770(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when771(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field772(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score773(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels774(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when775(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field776(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score777(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels778(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when779(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field780(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score781(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels782(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when783(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field784(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score785(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels786(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when787(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field788(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score789(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels790(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when791(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field792(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score793(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels794(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when795(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field796(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score797(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels798(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when799(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field800(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score801(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels802(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when803(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field804(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score805(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels806(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when807(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field808(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 12).toLowerCase() : ""; }
function score809(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels810(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when811(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field812(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 16).toLowerCase() : ""; }
function score813(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels814(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when815(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field816(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 3).toLowerCase() : ""; }
function score817(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels818(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when819(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field820(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 7).toLowerCase() : ""; }
function score821(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels822(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when823(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field824(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 11).toLowerCase() : ""; }
function score825(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels826(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when827(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field828(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 15).toLowerCase() : ""; }
function score829(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels830(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when831(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field832(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 19).toLowerCase() : ""; }
function score833(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels834(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when835(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field836(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 6).toLowerCase() : ""; }
function score837(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels838(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when839(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field840(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 10).toLowerCase() : ""; }
function score841(item) { const s = Number(item && item.score) || 0; return Math.round(s * 6) / 6; }
function labels842(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when843(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field844(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 14).toLowerCase() : ""; }
function score845(item) { const s = Number(item && item.score) || 0; return Math.round(s * 10) / 10; }
function labels846(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when847(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field848(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 18).toLowerCase() : ""; }
function score849(item) { const s = Number(item && item.score) || 0; return Math.round(s * 5) / 5; }
function labels850(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when851(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field852(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 5).toLowerCase() : ""; }
function score853(item) { const s = Number(item && item.score) || 0; return Math.round(s * 9) / 9; }
function labels854(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
function when855(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 9) : null; }
function field856(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 9).toLowerCase() : ""; }
function score857(item) { const s = Number(item && item.score) || 0; return Math.round(s * 4) / 4; }
function labels858(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 3) : []; }
function when859(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 13) : null; }
function field860(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 13).toLowerCase() : ""; }
function score861(item) { const s = Number(item && item.score) || 0; return Math.round(s * 8) / 8; }
function labels862(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 2) : []; }
function when863(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 7) : null; }
function field864(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 17).toLowerCase() : ""; }
function score865(item) { const s = Number(item && item.score) || 0; return Math.round(s * 3) / 3; }
function labels866(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 1) : []; }
function when867(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 11) : null; }
function field868(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 4).toLowerCase() : ""; }
function score869(item) { const s = Number(item && item.score) || 0; return Math.round(s * 7) / 7; }
function labels870(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 0) : []; }
function when871(item) { const d = item && item.updated; return typeof d === "string" ? d.slice(0, 5) : null; }
function field872(item) { const v = item && item.title; return typeof v === "string" ? v.slice(0, 8).toLowerCase() : ""; }
function score873(item) { const s = Number(item && item.score) || 0; return Math.round(s * 2) / 2; }
function labels874(item) { return Array.isArray(item && item.labels) ? item.labels.filter(l => l.length > 4) : []; }
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
