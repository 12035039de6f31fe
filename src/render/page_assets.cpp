#include "render/page_assets.hpp"

namespace joules::render {

std::string_view page_css() {
  // Print: A4 portrait, no cut through a chart or a table, no pointer tips.
  return R"css(
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#111;background:#fff;margin:0 auto;
max-width:960px;padding:16px 20px;font-size:14px;line-height:1.4}
h1{font-size:22px;margin:0 0 4px}h2{font-size:19px;border-bottom:2px solid #0072B2;padding-bottom:3px;
margin-top:28px}h3{font-size:16px;margin:22px 0 8px}
.sub{color:#444;margin:0 0 10px}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:8px}
.card{border:1px solid #bbb;border-radius:4px;padding:8px;break-inside:avoid}
.card-title{font-size:12px;color:#444;text-transform:uppercase;letter-spacing:.04em}
.card-value{font-size:20px;font-weight:bold;margin:2px 0 4px}
.how{font-size:11px;color:#444}
table{border-collapse:collapse;margin:6px 0 10px;break-inside:avoid}
table.data th,table.data td{border-bottom:1px solid #ccc;padding:3px 10px 3px 0;text-align:right}
table.data th:first-child,table.data td:first-child,table.data td:nth-child(2){text-align:left}
table.facts th{text-align:left;padding:1px 14px 1px 0;color:#444;font-weight:normal;vertical-align:top}
table.facts td{word-break:break-word}
figure.chart{margin:6px 0 14px;position:relative;break-inside:avoid}
figure.chart svg{max-width:100%;height:auto;font-size:12px;font-family:inherit}
figcaption{font-size:12px;color:#333}
.grid{stroke:#e3e3e3;stroke-width:1}.tickmark{stroke:#000}.axes line{stroke:#000;stroke-width:1}
.tick{fill:#222;font-size:11px}.axis-title{fill:#000;font-size:12px}
.span-label{fill:#333;font-size:10px}.ref{fill:#000;font-size:11px}
.legend text{fill:#000;font-size:11px}
.none{color:#444;font-style:italic}.warn{color:#8a3b00}
.uuid{color:#666;font-size:11px}.at{color:#444;font-variant-numeric:tabular-nums}
ul.events{padding-left:18px}
.tip{position:absolute;pointer-events:none;background:#fff;border:1px solid #333;padding:4px 6px;
font-size:12px;white-space:pre;display:none;box-shadow:1px 1px 3px rgba(0,0,0,.3)}
footer{margin-top:30px;color:#555;font-size:11px;border-top:1px solid #ccc;padding-top:6px}
@media print{body{max-width:none;padding:0}.tip{display:none!important}section.run{break-before:page}
section.run:first-of-type{break-before:auto}h3{break-after:avoid}}
@page{size:A4;margin:14mm}
)css";
}

std::string_view page_script() {
  // Reads each chart's axis mapping (data-*) and the points of its lines back from the SVG: the
  // data is in the page once.
  return R"js(
(function(){
function fmt(v){var a=Math.abs(v);return a>=1e4||a<1e-2&&a>0?v.toExponential(3):(+v.toPrecision(4)).toString();}
document.querySelectorAll('figure.chart svg[data-x0]').forEach(function(svg){
 var lines=[].slice.call(svg.querySelectorAll('polyline.series')).map(function(l){
  return {label:l.getAttribute('data-label'),pts:l.getAttribute('points').trim().split(/\s+/).map(function(p){
   var a=p.split(',');return [+a[0],+a[1]];})};});
 if(!lines.length)return;
 var d=svg.dataset,tip=document.createElement('div');tip.className='tip';svg.parentNode.appendChild(tip);
 var cur=document.createElementNS(svg.namespaceURI,'line');
 cur.setAttribute('stroke','#000');cur.setAttribute('stroke-width','0.7');cur.setAttribute('y1',d.py1);
 cur.setAttribute('y2',d.py0);cur.style.display='none';svg.appendChild(cur);
 svg.addEventListener('mousemove',function(ev){
  var r=svg.getBoundingClientRect(),vb=svg.viewBox.baseVal,px=(ev.clientX-r.left)*vb.width/r.width;
  if(px<+d.px0||px>+d.px1){tip.style.display='none';cur.style.display='none';return;}
  var x=+d.x0+(px-d.px0)/(d.px1-d.px0)*(d.x1-d.x0),rows=[];
  var head=d.xunit?'t = '+fmt(x/d.xscale)+' '+d.xunit:'x = '+fmt(x);
  lines.forEach(function(l){var lo=0,hi=l.pts.length-1;while(lo<hi){var m=(lo+hi)>>1;if(l.pts[m][0]<px)lo=m+1;else hi=m;}
   var p=l.pts[lo];if(lo>0&&Math.abs(l.pts[lo-1][0]-px)<Math.abs(p[0]-px))p=l.pts[lo-1];
   var y=+d.y0+(d.py0-p[1])/(d.py0-d.py1)*(d.y1-d.y0);rows.push(l.label+': '+fmt(y));});
  tip.textContent=head+'\n'+rows.join('\n');tip.style.display='block';
  var left=(ev.clientX-r.left)+14;if(left>r.width-160)left-=190;tip.style.left=left+'px';
  tip.style.top=((ev.clientY-r.top)+10)+'px';cur.setAttribute('x1',px);cur.setAttribute('x2',px);
  cur.style.display='';});
 svg.addEventListener('mouseleave',function(){tip.style.display='none';cur.style.display='none';});
});})();
)js";
}

}  // namespace joules::render
