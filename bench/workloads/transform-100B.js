const i=input.content[0].items;({total:i.length,open:i.filter(x=>x.state==="open").length})
