/*
 * The map page: the placemarks of the current view, read from the box query's GeoJSON answer as the
 * view moves, with a popup per placemark, a folder filter and the timeline. Runs under a strict
 * Content-Security-Policy: no inline code, no inline styles (Leaflet styles through the DOM).
 */
/* global L, DOMPurify */
'use strict'

;(function () {
  const LIMIT = 10000 // the box query's cap
  const GEOJSON = { accept: 'application/geo+json' }
  const body = document.body
  const statusEl = document.getElementById('status')
  const folderSelect = document.getElementById('folder')
  const searchInput = document.getElementById('search')
  const slider = document.getElementById('time')
  const timeLabel = document.getElementById('time-label')
  const eventList = document.getElementById('events')

  const STYLES = {
    Point: { radius: 6, color: '#8c1d18', weight: 2, fillColor: '#e8685f', fillOpacity: 0.9 },
    LineString: { color: '#1f5fbf', weight: 3, opacity: 0.9 },
    Polygon: { color: '#1b7f3b', weight: 2, fillColor: '#4caf6a', fillOpacity: 0.25 }
  }
  const HIGHLIGHT = { color: '#e65100', fillColor: '#ffb300', weight: 4, fillOpacity: 0.9 }

  // Descriptions are HTML from the imported file: sanitized, without styles (the CSP refuses them) and
  // without images (remote, and the page must work offline; they are listed as links instead).
  const SANITIZE = { FORBID_TAGS: ['img', 'style', 'video', 'audio', 'source', 'picture', 'iframe', 'form', 'input', 'button', 'textarea', 'select'], FORBID_ATTR: ['style'] }
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank')
      node.setAttribute('rel', 'noopener noreferrer')
    }
  })

  const map = L.map('map', { zoomControl: true, worldCopyJump: false })
  const tileUrl = body.dataset.tileUrl
  if (tileUrl) {
    L.tileLayer(tileUrl, { attribution: DOMPurify.sanitize(body.dataset.tileAttribution || '', SANITIZE), maxZoom: 19 }).addTo(map)
  } else {
    map.getContainer().classList.add('no-base-map')
  }
  map.fitWorld()

  const layers = L.layerGroup().addTo(map)
  const drawn = new Map() // placemark id → its layer
  let answer = null // the last box answer
  let answerUrl = ''
  let folder = ''
  let query = '' // the search box's words
  let matches = null // ids of the placemarks the words match (null: no search)
  let chosen = new Set() // placemark ids of the chosen time's events
  let fitted = false
  let pendingPopup = null
  let openId = null // the placemark whose popup is open: it stays open when the view is drawn again
  let controller = null
  let timer = null

  function setStatus (state, text, data) {
    statusEl.dataset.state = state
    statusEl.textContent = text
    Object.assign(statusEl.dataset, data || {})
  }

  function el (tag, className, text) {
    const node = document.createElement(tag)
    if (className) node.className = className
    if (text !== undefined) node.textContent = text
    return node
  }

  // Longitudes in [-180, 180]; a view wider than the world asks for all of them.
  function viewBox () {
    const b = map.getBounds()
    const round = (x) => Math.round(x * 1e6) / 1e6
    const wrap = (lon) => (lon >= -180 && lon <= 180 ? lon : ((((lon + 180) % 360) + 360) % 360) - 180)
    let west = b.getWest()
    let east = b.getEast()
    if (east - west >= 360) {
      west = -180
      east = 180
    } else {
      west = wrap(west)
      east = wrap(east) // west > east: the view crosses the antimeridian
    }
    return {
      min_lon: round(west),
      min_lat: round(Math.max(-90, b.getSouth())),
      max_lon: round(east),
      max_lat: round(Math.min(90, b.getNorth()))
    }
  }

  // A new view: load it once the map has been still for a moment; an older request still running is dropped.
  function scheduleLoad () {
    clearTimeout(timer)
    statusEl.dataset.state = 'loading'
    timer = setTimeout(load, 250)
  }

  async function load () {
    const box = viewBox()
    const url = '/api/v1/spatial/bbox?' + new URLSearchParams({ ...box, limit: String(LIMIT) })
    if (controller) controller.abort()
    const own = controller = new AbortController()
    setStatus('loading', 'Loading…')
    try {
      const res = await fetch(url, { headers: GEOJSON, signal: own.signal })
      const json = await res.json()
      if (!res.ok) throw new Error(json.message || res.statusText)
      if (own !== controller) return
      answer = json
      answerUrl = url
      draw()
    } catch (err) {
      if (err.name === 'AbortError') return
      setStatus('error', 'Could not load the placemarks: ' + err.message, { count: '0' })
    }
  }

  function styleOf (feature) {
    const base = STYLES[feature.geometry.type] || STYLES.Point
    return chosen.has(feature.id) ? { ...base, ...HIGHLIGHT } : base
  }

  // Positions drawn on the world copy nearest the view's centre, so a view across the antimeridian shows both sides.
  function nearLatLng (center) {
    return (c) => {
      let lon = c[0]
      while (lon - center > 180) lon -= 360
      while (lon - center < -180) lon += 360
      return L.latLng(c[1], lon)
    }
  }

  function draw () {
    const reopen = openId
    layers.clearLayers()
    drawn.clear()
    const features = answer.features.filter((f) => (!folder || f.properties.folder_path.includes(folder)) && (!matches || matches.has(f.id)))
    L.geoJSON({ type: 'FeatureCollection', features }, {
      coordsToLatLng: nearLatLng(map.getCenter().lng),
      pointToLayer: (feature, latlng) => L.circleMarker(latlng, styleOf(feature)),
      style: styleOf,
      onEachFeature: (feature, layer) => {
        layer.options.className = 'placemark placemark-' + feature.geometry.type.toLowerCase()
        layer.bindPopup(() => popup(feature), { maxWidth: 340 })
        drawn.set(feature.id, layer)
      }
    }).eachLayer((layer) => {
      layers.addLayer(layer)
      const element = layer.getElement && layer.getElement()
      if (element) element.dataset.id = String(layer.feature.id)
    })
    markChosen()

    if (!fitted && features.length) {
      // The first answer (the whole world) shows where the data is: the view moves there and loads again.
      fitted = true
      map.fitBounds(mainExtent(), { padding: [24, 24], maxZoom: 16, animate: false })
      scheduleLoad()
      return
    }
    const total = answer.features.length
    const limited = answer.count >= LIMIT
    let text = folder ? `${features.length} of ${total} placemarks in view are in “${folder}”` : `${total} placemarks in view`
    if (matches) text = `${features.length} of ${total} placemarks in view match “${query}”` + (folder ? ` in “${folder}”` : '')
    if (limited) text = `This view holds more than ${LIMIT} placemarks: the first ${LIMIT} (by id) are shown; zoom in to see them all. ` + text
    setStatus(limited ? 'limited' : 'ready', text, { count: String(features.length), total: String(total), url: answerUrl })
    const popupId = pendingPopup ?? reopen
    pendingPopup = null
    if (popupId !== null && drawn.has(popupId)) drawn.get(popupId).openPopup()
  }

  // Where most placemarks are: the middle 80 % of their centres in each direction, so that a few far
  // away (a test point on Null Island) do not shrink the rest to one dot.
  function mainExtent () {
    const centres = []
    drawn.forEach((layer) => centres.push(layer.getLatLng ? layer.getLatLng() : layer.getBounds().getCenter()))
    const lats = centres.map((c) => c.lat).sort((a, b) => a - b)
    const lngs = centres.map((c) => c.lng).sort((a, b) => a - b)
    const cut = centres.length >= 10 ? Math.floor(centres.length * 0.1) : 0
    const last = centres.length - 1 - cut
    return L.latLngBounds([lats[cut], lngs[cut]], [lats[last], lngs[last]])
  }

  function popup (feature) {
    openId = feature.id
    const p = feature.properties
    const root = el('div', 'popup')
    root.append(el('h3', null, p.name))
    if (p.folder_path.length) root.append(el('p', 'folder-path', p.folder_path.join(' › ')))
    const images = []
    if (p.description) {
      // An inert document (nothing loads in it) tells which images the description names.
      const parsed = new DOMParser().parseFromString(p.description, 'text/html')
      for (const img of parsed.querySelectorAll('img[src]')) images.push(img.getAttribute('src'))
      const description = el('div', 'description')
      description.innerHTML = DOMPurify.sanitize(p.description, SANITIZE)
      root.append(description)
    }
    const links = [...p.media_links, ...images].filter((href) => /^https?:\/\//i.test(href))
    if (links.length) {
      const list = el('ul', 'media')
      for (const href of links) {
        const a = el('a', null, href)
        a.href = href
        a.target = '_blank'
        a.rel = 'noopener noreferrer'
        const item = el('li')
        item.append(a)
        list.append(item)
      }
      root.append(list)
    }
    const more = el('p', 'links')
    const json = el('a', null, 'JSON')
    json.href = `/api/v1/placemarks/${feature.id}`
    const geojson = el('a', null, 'GeoJSON')
    geojson.href = `/api/v1/placemarks/${feature.id}?format=geojson`
    more.append(json, ' · ', geojson)
    root.append(more)
    return root
  }

  // --- Folder filter: the answer in hand is filtered, nothing is loaded again.
  async function loadFolders () {
    const res = await fetch('/api/v1/folders')
    if (!res.ok) return
    const { folders } = await res.json()
    for (const name of folders) folderSelect.append(new Option(name, name))
  }
  // The search box: the ids of every placemark whose name or description holds each word (the list's
  // `q`, a page of 1000 at a time), then the view drawn with only those.
  let searchTimer = null
  let searchController = null
  async function search () {
    const words = searchInput.value.trim()
    if (searchController) searchController.abort()
    if (!words) {
      query = ''
      matches = null
      if (answer) draw()
      return
    }
    const own = searchController = new AbortController()
    setStatus('loading', 'Searching…')
    try {
      const ids = new Set()
      for (let offset = 0; offset < 20000; offset += 1000) {
        const res = await fetch('/api/v1/placemarks?' + new URLSearchParams({ q: words, limit: '1000', offset: String(offset) }), { signal: own.signal })
        const json = await res.json()
        if (!res.ok) throw new Error(json.message || res.statusText)
        for (const p of json.placemarks) ids.add(p.id)
        if (json.placemarks.length < 1000) break
      }
      if (own !== searchController) return
      query = words
      matches = ids
      if (answer) draw()
    } catch (err) {
      if (err.name === 'AbortError') return
      setStatus('error', 'Could not search: ' + err.message, { count: '0' })
    }
  }
  searchInput.addEventListener('input', () => {
    clearTimeout(searchTimer)
    searchTimer = setTimeout(search, 300)
  })

  folderSelect.addEventListener('change', () => {
    folder = folderSelect.value
    if (answer) draw()
  })

  // --- Timeline: events grouped by instant (or by date when the name has no time); the slider picks one.
  const groups = []
  const items = new Map() // placemark id → its list item

  function whenOf (p) {
    return p.timestamp ? p.timestamp.replace('T', ' ').replace('Z', ' UTC') : `${p.date} (date only)`
  }

  async function loadTimeline () {
    const res = await fetch('/api/v1/timeline/events', { headers: GEOJSON })
    if (!res.ok) return
    const { features } = await res.json()
    const byKey = new Map()
    for (const f of features) {
      const key = f.properties.timestamp || f.properties.date
      if (!byKey.has(key)) {
        byKey.set(key, { when: whenOf(f.properties), features: [] })
        groups.push(byKey.get(key))
      }
      byKey.get(key).features.push(f)
    }
    if (!groups.length) {
      document.getElementById('time-empty').hidden = false
      document.getElementById('time-control').hidden = true
      return
    }
    slider.max = String(groups.length - 1)
    timeLabel.textContent = 'Move the slider or pick an event to highlight it on the map.'
    groups.forEach((group, index) => {
      for (const f of group.features) {
        const item = el('li')
        item.dataset.group = String(index)
        const button = el('button')
        button.type = 'button'
        button.append(el('span', 'when', group.when), el('span', 'name', f.properties.name))
        button.addEventListener('click', () => showEvent(index, f))
        item.append(button)
        eventList.append(item)
        items.set(f.id, item)
      }
    })
  }

  function choose (index) {
    const group = groups[index]
    slider.value = String(index)
    chosen = new Set(group.features.map((f) => f.id))
    timeLabel.textContent = `${group.when}: ${group.features.length} event${group.features.length === 1 ? '' : 's'}`
    timeLabel.dataset.events = String(group.features.length)
    for (const item of eventList.children) item.classList.toggle('chosen', item.dataset.group === String(index))
    const first = items.get(group.features[0].id)
    if (first) first.scrollIntoView({ block: 'nearest' })
    markChosen()
  }

  // The chosen time's placemarks drawn in the highlight style, in front of the others.
  function markChosen () {
    let shown = 0
    drawn.forEach((layer, id) => {
      const on = chosen.has(id)
      layer.setStyle(styleOf(layer.feature))
      const element = layer.getElement && layer.getElement()
      if (element) element.classList.toggle('highlighted', on)
      if (on) {
        layer.bringToFront()
        shown++
      }
    })
    statusEl.dataset.highlighted = String(shown)
  }

  function showEvent (index, feature) {
    choose(index)
    const location = feature.properties.location
    if (drawn.has(feature.id)) {
      drawn.get(feature.id).openPopup()
    } else if (location) {
      pendingPopup = feature.id
      map.setView([location.lat, location.lon], Math.max(map.getZoom(), 15))
    }
  }

  slider.addEventListener('input', () => choose(Number(slider.value)))

  map.on('popupclose', () => { openId = null })
  map.on('moveend', scheduleLoad)
  scheduleLoad()
  loadFolders().catch(() => {})
  loadTimeline().catch(() => {})
})()
