/* html_assets.S: the files a `gpuleak html` page is made of, inside the
 * gpuleak binary so the command needs no file at run time: the page's
 * template, style and script (cli/html/, kept as real files so they
 * read and lint as what they are) and the vendored libraries
 * (third_party/js/). Each is html_asset_NAME .. html_asset_NAME_end;
 * html.c declares them. The Makefile lists these files as the object's
 * prerequisites, so editing one rebuilds the binary. */
    .macro asset name, path
    .section .rodata
    .globl html_asset_\name, html_asset_\name\()_end
    .hidden html_asset_\name, html_asset_\name\()_end
html_asset_\name:
    .incbin "\path"
html_asset_\name\()_end:
    .endm

    asset page_html, "cli/html/page.html"
    asset page_css, "cli/html/page.css"
    asset page_js, "cli/html/page.js"
    asset uplot_css, "third_party/js/uplot/uPlot.min.css"
    asset uplot_js, "third_party/js/uplot/uPlot.iife.min.js"
    asset d3_js, "third_party/js/d3/d3.min.js"
    asset flame_css, "third_party/js/d3-flame-graph/d3-flamegraph.css"
    asset flame_js, "third_party/js/d3-flame-graph/d3-flamegraph.umd.min.js"

    .section .note.GNU-stack,"",@progbits
